"""``raiz_payment_webhook_deliveries_total{outcome, secret}``: every delivery of the payment
webhook is counted once, by how it was answered (``credited``, ``replayed`` or the refusal's
code) and which accepted secret its signature matched (``current``, ``previous``, ``none``),
so operators see refused signatures and know when a previous secret is no longer used."""

from __future__ import annotations

import json
import time

import pytest
from litestar.testing import AsyncTestClient

from app.main import create_app
from app.wallet.metrics import WEBHOOK_DELIVERIES
from app.wallet.webhook import sign
from tests.conftest import make_settings
from tests.helpers import assert_error, auth, create_user, login

pytestmark = pytest.mark.asyncio

CURRENT = "the-secret-after-the-rotation"
PREVIOUS = "the-secret-before-the-rotation"


def deliveries() -> dict[tuple[str, str], float]:
    return {
        (sample.labels["outcome"], sample.labels["secret"]): sample.value
        for family in WEBHOOK_DELIVERIES.collect()
        for sample in family.samples
        if sample.name.endswith("_total")
    }


class Counted:
    """What the deliveries counter gained since the last call: {(outcome, secret): n}."""

    def __init__(self) -> None:
        self._last = deliveries()

    def __call__(self) -> dict[tuple[str, str], float]:
        now = deliveries()
        gained = {key: n - self._last.get(key, 0) for key, n in now.items()}
        self._last = now
        return {key: n for key, n in gained.items() if n}


@pytest.fixture
async def player(client, settings):
    user_id = await create_user(settings, "paula")
    return {"id": user_id, "token": await login(client, "paula")}


def event(player, **overrides) -> dict:
    return {
        "event_id": "evt_1",
        "type": "deposit.succeeded",
        "user_id": player["id"],
        "amount_cents": 5_000,
        "currency": "BRL",
        "payment_id": "pay_1",
        **overrides,
    }


async def deliver(client, body: dict | bytes, header: str | None):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    if header is not None:
        headers["X-Raiz-Signature"] = header
    return await client.post("/payments/webhook", content=raw, headers=headers)


async def balance(client, player) -> tuple[int, int]:
    wallet = (await client.get("/wallet", headers=auth(player["token"]))).json()
    return wallet["balance_cents"], wallet["version"]


async def test_every_outcome_of_a_delivery_is_counted_once(client, settings, player):
    secret = settings.payment_webhook_secret
    counted = Counted()

    def signed(body, at=None):
        return sign(secret, json.dumps(body).encode(), at)

    first = event(player)
    credited = await deliver(client, first, signed(first))
    assert credited.status_code == 200 and credited.json()["replayed"] is False
    assert counted() == {("credited", "current"): 1}
    assert await balance(client, player) == (5_000, 1)
    replayed = await deliver(client, first, signed(first))
    assert replayed.status_code == 200 and replayed.json()["replayed"] is True
    assert counted() == {("replayed", "current"): 1}

    # Each refusal is counted once, under its code, and changes nothing.
    now = int(time.time())
    stale_at = now - settings.payment_webhook_tolerance_s - 60
    other = event(player, event_id="evt_2", payment_id="pay_2")
    refusals = [
        (other, None, 401, "invalid_signature", "none"),
        (other, sign("not-our-secret-at-all", json.dumps(other).encode()), 401,
         "invalid_signature", "none"),
        (other, "sha256=" + "0" * 64, 401, "malformed_signature", "none"),
        (other, signed(other, stale_at), 401, "stale_signature", "current"),
        (b"{not json", sign(secret, b"{not json"), 400, "validation_error", "current"),
        (event(player, amount_cents=1), signed(event(player, amount_cents=1)), 409,
         "idempotency_conflict", "current"),
        (event(player, event_id="evt_3"), signed(event(player, event_id="evt_3")), 409,
         "payment_already_credited", "current"),
        (event(player, user_id="00000000-0000-4000-8000-000000000000"),
         signed(event(player, user_id="00000000-0000-4000-8000-000000000000")), 404,
         "user_not_found", "current"),
    ]  # fmt: skip
    for body, header, status, code, secret_label in refusals:
        assert_error(await deliver(client, body, header), status, code)
        assert counted() == {(code, secret_label): 1}, code
    assert await balance(client, player) == (5_000, 1)
    # A refused event id was not recorded: its first valid delivery is credited.
    applied = await deliver(client, other, signed(other))
    assert applied.status_code == 200 and applied.json()["replayed"] is False
    assert counted() == {("credited", "current"): 1}

    # The counter is on /metrics, with the refusals the alerts watch.
    text = (await client.get("/metrics")).text
    assert 'raiz_payment_webhook_deliveries_total{outcome="credited",secret="current"}' in text
    assert 'raiz_payment_webhook_deliveries_total{outcome="stale_signature",secret="previous"}' in (
        text
    )


async def test_the_secret_label_says_which_secret_signed_during_a_rotation(
    database_url, client, player
):
    rotating = make_settings(
        database_url,
        payment_webhook_secret=CURRENT,
        payment_webhook_previous_secrets=f"an-even-older-secret-kept-too, {PREVIOUS}",
        run_scheduler=False,
    )
    rotated = make_settings(database_url, payment_webhook_secret=CURRENT, run_scheduler=False)
    counted = Counted()

    def body(n: int) -> dict:
        return event(player, event_id=f"evt_{n}", payment_id=f"pay_{n}", amount_cents=n)

    def raw(n: int) -> bytes:
        return json.dumps(body(n)).encode()

    async with AsyncTestClient(app=create_app(rotating)) as during:
        for n, secrets, expected in (
            (1, PREVIOUS, "previous"),
            (2, "an-even-older-secret-kept-too", "previous"),
            (3, CURRENT, "current"),
            # the provider, rotating, signs with both: the current secret already works
            (4, (PREVIOUS, CURRENT), "current"),
            (5, (CURRENT, PREVIOUS), "current"),
        ):
            applied = await deliver(during, body(n), sign(secrets, raw(n)))
            assert applied.status_code == 200, applied.text
            assert counted() == {("credited", expected): 1}, n
        late = int(time.time()) - 3_600
        stale = await deliver(during, body(6), sign(PREVIOUS, raw(6), late))
        assert_error(stale, 401, "stale_signature")
        assert "current" not in stale.text and "previous" not in stale.text
        assert counted() == {("stale_signature", "previous"): 1}
    async with AsyncTestClient(app=create_app(rotated)) as after:
        refused = await deliver(after, body(7), sign(PREVIOUS, raw(7)))
        assert_error(refused, 401, "invalid_signature")
        assert counted() == {("invalid_signature", "none"): 1}
    assert await balance(client, player) == (1 + 2 + 3 + 4 + 5, 5)


async def test_a_credited_delivery_whose_answer_fails_is_counted_once_as_credited(
    client, settings, player, monkeypatch
):
    # The credit is committed, then building the 200 fails (the provider gets a 500 and
    # re-delivers, which is then a replay): the delivery was credited, and it is counted
    # once as such, not also as an internal_error.
    from app.wallet.service import WalletService

    real = WalletService.apply_payment_event

    async def credited_then_unanswerable(self, event):
        result = await real(self, event)
        result.event_id = object()  # the answer cannot be encoded
        return result

    monkeypatch.setattr(WalletService, "apply_payment_event", credited_then_unanswerable)
    counted = Counted()
    body = event(player)
    raw = json.dumps(body).encode()
    failed = await deliver(client, raw, sign(settings.payment_webhook_secret, raw))
    assert failed.status_code == 500
    assert counted() == {("credited", "current"): 1}
    monkeypatch.setattr(WalletService, "apply_payment_event", real)
    again = await deliver(client, raw, sign(settings.payment_webhook_secret, raw))
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert counted() == {("replayed", "current"): 1}
    assert await balance(client, player) == (5_000, 1)
