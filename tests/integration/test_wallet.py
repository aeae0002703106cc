"""Wallet API: balance and statement, operator deposits and withdrawals with
Idempotency-Key, account inspection, the signed payment webhook, role guards."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid

import pytest
from litestar.testing import AsyncTestClient

from app.main import create_app
from app.wallet.webhook import sign
from tests.conftest import make_settings
from tests.helpers import assert_error, auth, create_user, login

pytestmark = pytest.mark.asyncio


@pytest.fixture
async def people(client, settings):
    """Tokens and ids of a player, an operator and a compliance officer."""
    ids = {
        "player": await create_user(settings, "paula"),
        "operator": await create_user(settings, "otto", role="operator"),
        "compliance": await create_user(settings, "clara", role="compliance"),
    }
    tokens = {role: await login(client, name) for role, name in
              (("player", "paula"), ("operator", "otto"), ("compliance", "clara"))}  # fmt: skip
    return {"id": ids, "token": tokens}


def key() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


async def deposit(client, people, amount_cents, headers=None, **body):
    return await client.post(
        f"/admin/wallets/{people['id']['player']}/deposits",
        json={"amount_cents": amount_cents, **body},
        headers={**auth(people["token"]["operator"]), **(headers or key())},
    )


async def test_a_new_player_has_a_zero_balance_and_an_empty_statement(client, people):
    wallet = await client.get("/wallet", headers=auth(people["token"]["player"]))
    assert wallet.status_code == 200, wallet.text
    assert wallet.json() == {
        "user_id": people["id"]["player"],
        "account_id": None,
        "currency": "BRL",
        "balance_cents": 0,
        "version": 0,
    }
    statement = await client.get("/wallet/statement", headers=auth(people["token"]["player"]))
    assert statement.json() == {
        "account_id": None,
        "balance_cents": 0,
        "lines": [],
        "next_before_version": None,
    }


async def test_deposit_is_idempotent_by_key_and_shows_in_balance_and_statement(client, people):
    headers = key()
    first = await deposit(client, people, 2_500, headers, payment_reference="pix-123")
    assert first.status_code == 201, first.text
    created = first.json()
    assert created["kind"] == "deposit" and created["amount_cents"] == 2_500
    assert created["credit"]["balance_after_cents"] == 2_500
    assert created["reference"] == {"payment": "pix-123"}
    assert created["metadata"] == {"operator": people["id"]["operator"]}
    assert created["replayed"] is False

    again = await deposit(client, people, 2_500, headers, payment_reference="pix-123")
    assert again.status_code == 200
    assert again.json() == {**created, "replayed": True}

    assert_error(await deposit(client, people, 2_501, headers), 409, "idempotency_conflict")
    withdraw_same_key = await client.post(
        f"/admin/wallets/{people['id']['player']}/withdrawals",
        json={"amount_cents": 2_500, "payment_reference": "pix-123"},
        headers={**auth(people["token"]["operator"]), **headers},
    )
    assert_error(withdraw_same_key, 409, "idempotency_conflict")

    player = auth(people["token"]["player"])
    wallet = (await client.get("/wallet", headers=player)).json()
    assert wallet["balance_cents"] == 2_500 and wallet["version"] == 1
    lines = (await client.get("/wallet/statement", headers=player)).json()["lines"]
    assert len(lines) == 1
    assert lines[0]["transfer_id"] == f"op:{headers['Idempotency-Key']}"
    assert lines[0]["balance_after_cents"] == 2_500
    assert lines[0]["reference"] == {"payment": "pix-123"}


async def test_withdrawal_beyond_the_balance_is_refused_and_changes_nothing(client, people):
    await deposit(client, people, 1_000)
    operator = auth(people["token"]["operator"])
    url = f"/admin/wallets/{people['id']['player']}/withdrawals"
    refused = await client.post(url, json={"amount_cents": 1_001}, headers={**operator, **key()})
    body = assert_error(refused, 422, "insufficient_funds")
    assert body["details"]["balance_cents"] == 1_000
    paid = await client.post(
        url, json={"amount_cents": 1_000, "note": "PIX out"}, headers={**operator, **key()}
    )
    assert paid.status_code == 201, paid.text
    assert paid.json()["debit"]["balance_after_cents"] == 0
    assert paid.json()["metadata"]["note"] == "PIX out"
    wallet = (await client.get("/wallet", headers=auth(people["token"]["player"]))).json()
    assert wallet["balance_cents"] == 0 and wallet["version"] == 2


async def test_malformed_money_requests_get_400_and_unknown_users_404(client, people):
    operator = auth(people["token"]["operator"])
    url = f"/admin/wallets/{people['id']['player']}/deposits"
    missing_key = await client.post(url, json={"amount_cents": 100}, headers=operator)
    assert_error(missing_key, 400, "validation_error")
    bad_key = await client.post(
        url, json={"amount_cents": 100}, headers={**operator, "Idempotency-Key": "has space"}
    )
    assert_error(bad_key, 400, "validation_error")
    for body in ({"amount_cents": 0}, {"amount_cents": -1}, {"amount_cents": 1.5},
                 {"amount_cents": "100"}, {"amount_cents": 10**12 + 1}, {},
                 {"amount_cents": 100, "extra": 1}):  # fmt: skip
        assert_error(
            await client.post(url, json=body, headers={**operator, **key()}),
            400,
            "validation_error",
        )
    nobody = await client.post(
        f"/admin/wallets/{uuid.uuid4()}/deposits",
        json={"amount_cents": 100},
        headers={**operator, **key()},
    )
    assert_error(nobody, 404, "user_not_found")


async def test_a_nul_character_in_a_note_or_payment_reference_is_a_400(client, settings, people):
    """PostgreSQL cannot store U+0000 in jsonb: refused up front, not a 500 from the write."""
    operator = auth(people["token"]["operator"])
    for direction in ("deposits", "withdrawals"):
        url = f"/admin/wallets/{people['id']['player']}/{direction}"
        for body in ({"amount_cents": 100, "note": "PIX\u0000"},
                     {"amount_cents": 100, "payment_reference": "\u0000"}):  # fmt: skip
            refused = await client.post(url, json=body, headers={**operator, **key()})
            assert refused.status_code == 400, refused.text
            assert refused.json()["code"] in {"invalid_metadata", "invalid_reference"}
    refused = await post_event(client, settings, event(people, payment_id="pay\u0000"))
    assert_error(refused, 400, "invalid_reference")
    wallet = (await client.get("/wallet", headers=auth(people["token"]["player"]))).json()
    assert wallet["balance_cents"] == 0 and wallet["version"] == 0


async def test_roles_guard_the_money_and_account_routes(client, people):
    player, compliance = auth(people["token"]["player"]), auth(people["token"]["compliance"])
    url = f"/admin/wallets/{people['id']['player']}/deposits"
    for headers in (player, compliance):
        refused = await client.post(url, json={"amount_cents": 100}, headers={**headers, **key()})
        assert_error(refused, 403, "forbidden")
    assert_error(await client.post(url, json={"amount_cents": 100}, headers=key()), 401,
                 "not_authenticated")  # fmt: skip
    assert_error(await client.get("/admin/accounts", headers=player), 403, "forbidden")
    assert_error(await client.get("/wallet"), 401, "not_authenticated")
    assert (await client.get("/admin/accounts", headers=compliance)).status_code == 200
    wallet = (await client.get("/wallet", headers=auth(people["token"]["operator"]))).json()
    assert wallet["user_id"] == people["id"]["operator"]


async def test_operators_and_compliance_read_any_account_and_statement(client, people):
    for _ in range(3):
        await deposit(client, people, 100)
    compliance = auth(people["token"]["compliance"])
    system = (await client.get("/admin/accounts", headers=compliance)).json()
    assert {account["type"] for account in system} >= {
        "cash_in", "cash_out", "house_revenue", "prize_fund", "player_wallet",
    }  # fmt: skip
    wallets = await client.get(
        "/admin/accounts",
        params={"type": "player_wallet", "owner_id": people["id"]["player"]},
        headers=compliance,
    )
    [wallet] = wallets.json()
    assert wallet["balance_cents"] == 300 and wallet["may_go_negative"] is False
    one = await client.get(f"/admin/accounts/{wallet['id']}", headers=compliance)
    assert one.json() == wallet
    page = await client.get(
        f"/admin/accounts/{wallet['id']}/statement", params={"limit": 2}, headers=compliance
    )
    assert [line["account_version"] for line in page.json()["lines"]] == [3, 2]
    assert page.json()["next_before_version"] == 2
    rest = await client.get(
        f"/admin/accounts/{wallet['id']}/statement",
        params={"limit": 2, "before_version": 2},
        headers=compliance,
    )
    assert [line["account_version"] for line in rest.json()["lines"]] == [1]
    assert rest.json()["next_before_version"] is None
    cash_in = next(account for account in system if account["type"] == "cash_in")
    assert (await client.get(f"/admin/accounts/{cash_in['id']}", headers=compliance)).json()[
        "balance_cents"
    ] == -300
    assert_error(
        await client.get(f"/admin/accounts/{uuid.uuid4()}", headers=compliance),
        404,
        "account_not_found",
    )
    assert_error(
        await client.get(f"/admin/accounts/{uuid.uuid4()}/statement", headers=compliance),
        404,
        "account_not_found",
    )
    assert_error(
        await client.get("/admin/accounts", params={"type": "piggy_bank"}, headers=compliance),
        400,
        "validation_error",
    )


async def post_event(
    client, settings, event: dict, signature: str | None = "sign", raw=None, timestamp=None
):
    """Post ``event`` signed now (or at ``timestamp``) with the current secret, unless another
    ``signature`` header (or ``None``: none) is given."""
    body = raw if raw is not None else json.dumps(event).encode()
    headers = {"content-type": "application/json"}
    if signature == "sign":
        headers["X-Raiz-Signature"] = sign(settings.payment_webhook_secret, body, timestamp)
    elif signature is not None:
        headers["X-Raiz-Signature"] = signature
    return await client.post("/payments/webhook", content=body, headers=headers)


def event(people, **overrides) -> dict:
    return {
        "event_id": "evt_1",
        "type": "deposit.succeeded",
        "user_id": people["id"]["player"],
        "amount_cents": 5_000,
        "currency": "BRL",
        "payment_id": "pay_77",
        **overrides,
    }


async def test_the_webhook_applies_a_signed_event_once(client, settings, people):
    first = await post_event(client, settings, event(people))
    assert first.status_code == 200, first.text
    assert first.json()["replayed"] is False
    transfer = first.json()["transfer"]
    assert transfer["id"] == "payment:evt_1" and transfer["kind"] == "deposit"
    assert transfer["reference"] == {"payment": "pay_77", "provider_event": "evt_1"}

    replay = await post_event(client, settings, event(people))
    assert replay.status_code == 200
    assert replay.json() == {"event_id": "evt_1", "transfer": {**transfer, "replayed": True},
                             "replayed": True}  # fmt: skip
    conflicting = await post_event(client, settings, event(people, amount_cents=5_001))
    assert_error(conflicting, 409, "idempotency_conflict")

    wallet = (await client.get("/wallet", headers=auth(people["token"]["player"]))).json()
    assert wallet["balance_cents"] == 5_000 and wallet["version"] == 1


@pytest.mark.parametrize(
    "overrides",
    [
        {"currency": "USD"},
        {"currency": "brl"},
        {"amount_cents": 0},
        {"amount_cents": -500},
        {"amount_cents": 12.5},
        {"amount_cents": "500"},
        {"amount_cents": 10**12 + 1},
    ],
    ids=["usd", "lowercase-brl", "zero", "negative", "fraction", "string", "too-large"],
)
async def test_a_signed_event_with_another_currency_or_amount_credits_nothing(
    client, settings, people, overrides
):
    refused = await post_event(client, settings, event(people, event_id="evt_x", **overrides))
    assert_error(refused, 400, "validation_error")
    wallet = (await client.get("/wallet", headers=auth(people["token"]["player"]))).json()
    assert wallet["balance_cents"] == 0 and wallet["account_id"] is None
    # nothing of the event was recorded: its first valid delivery is applied as new
    applied = await post_event(client, settings, event(people, event_id="evt_x"))
    assert applied.status_code == 200 and applied.json()["replayed"] is False


async def test_a_redelivery_signed_later_is_still_applied_once(client, settings, people):
    # The provider signs each delivery afresh: a retry carries another timestamp and header.
    now = int(time.time())
    first = await post_event(client, settings, event(people), timestamp=now - 200)
    assert first.status_code == 200 and first.json()["replayed"] is False
    again = await post_event(client, settings, event(people), timestamp=now)
    assert again.status_code == 200 and again.json()["replayed"] is True
    wallet = (await client.get("/wallet", headers=auth(people["token"]["player"]))).json()
    assert wallet["balance_cents"] == 5_000 and wallet["version"] == 1


async def test_the_webhook_refuses_missing_wrong_and_stale_signatures(client, settings, people):
    good = event(people, event_id="evt_2")
    body = json.dumps(good).encode()
    assert_error(await post_event(client, settings, good, signature=None), 401, "invalid_signature")
    # The signature is checked before the body is read: a stranger learns nothing of its shape.
    for raw in (b"{not json", b'{"event_id": 5}'):
        assert_error(
            await post_event(client, settings, good, signature=None, raw=raw),
            401,
            "invalid_signature",
        )
    assert_error(
        await post_event(
            client, settings, good, signature=f"t={int(time.time())},sha256=" + "0" * 64
        ),
        401,
        "invalid_signature",
    )
    # The former format, an untimestamped HMAC of the body, is refused as malformed.
    body_only = hmac.new(settings.payment_webhook_secret.encode(), body, hashlib.sha256)
    assert_error(
        await post_event(client, settings, good, signature=f"sha256={body_only.hexdigest()}"),
        401,
        "malformed_signature",
    )
    # A right signature dated beyond the tolerance either way: a replay, or a skewed clock.
    tolerance = settings.payment_webhook_tolerance_s
    for offset in (-tolerance - 60, tolerance + 60):
        stale = await post_event(client, settings, good, timestamp=int(time.time()) + offset)
        assert_error(stale, 401, "stale_signature")
    assert_error(
        await post_event(client, settings, good, signature=sign("another-secret", b"{}")),
        401,
        "invalid_signature",
    )
    # A signature of another body does not carry over (amount changed after signing).
    signed_body = json.dumps(good).encode()
    tampered = json.dumps({**good, "amount_cents": 9_999_999}).encode()
    assert_error(
        await post_event(client, settings, good, signature=sign(settings.payment_webhook_secret,
                         signed_body), raw=tampered),
        401,
        "invalid_signature",
    )  # fmt: skip
    assert_error(
        await post_event(client, settings, good, raw=b"{not json"), 400, "validation_error"
    )
    # "$" matches before a final newline: an event id ending in one is not another event.
    assert_error(
        await post_event(client, settings, event(people, event_id="evt_2\n")),
        400,
        "validation_error",
    )
    assert_error(
        await post_event(client, settings, event(people, type="refund.created")),
        400,
        "validation_error",
    )
    assert_error(
        await post_event(client, settings, event(people, user_id=str(uuid.uuid4()))),
        404,
        "user_not_found",
    )
    wallet = (await client.get("/wallet", headers=auth(people["token"]["player"]))).json()
    assert wallet["balance_cents"] == 0
    # Nor was evt_2 recorded: its first valid delivery, with another amount, is a new event.
    applied = await post_event(client, settings, event(people, event_id="evt_2", amount_cents=7))
    assert applied.status_code == 200 and applied.json()["replayed"] is False


async def test_a_previous_secret_is_accepted_while_listed_and_refused_once_removed(
    database_url, people
):
    rotated_from = "the-secret-before-the-rotation"
    rotating = make_settings(
        database_url,
        payment_webhook_secret="the-secret-after-the-rotation",
        payment_webhook_previous_secrets=f"an-even-older-secret-kept-too, {rotated_from}",
        run_scheduler=False,
    )
    rotated = make_settings(
        database_url,
        payment_webhook_secret="the-secret-after-the-rotation",
        run_scheduler=False,
    )
    old_signed = event(people, event_id="evt_old", payment_id="pay_old")
    new_signed = event(people, event_id="evt_new", payment_id="pay_new")

    def signed(secret, body):
        return {
            "content-type": "application/json",
            "X-Raiz-Signature": sign(secret, json.dumps(body).encode()),
        }

    async with AsyncTestClient(app=create_app(rotated)) as after:
        # Once the previous secret is removed, its signatures are refused, and change nothing.
        refused = await after.post(
            "/payments/webhook",
            content=json.dumps(old_signed).encode(),
            headers=signed(rotated_from, old_signed),
        )
        assert_error(refused, 401, "invalid_signature")
    async with AsyncTestClient(app=create_app(rotating)) as during:
        for secret, body in (
            (rotated_from, old_signed),
            (rotating.payment_webhook_secret, new_signed),
        ):
            applied = await during.post(
                "/payments/webhook", content=json.dumps(body).encode(), headers=signed(secret, body)
            )
            assert applied.status_code == 200, applied.text
            assert applied.json()["replayed"] is False
        wallet = (await during.get("/wallet", headers=auth(people["token"]["player"]))).json()
        assert wallet["balance_cents"] == 10_000 and wallet["version"] == 2


async def test_ledger_metrics_are_exported(client, people):
    await deposit(client, people, 123)
    body = (await client.get("/metrics")).text
    assert 'raiz_ledger_transfers_total{kind="deposit"}' in body
    assert 'raiz_ledger_transferred_cents_total{kind="deposit"}' in body


async def test_compliance_reads_of_accounts_are_in_the_access_log(client, people):
    """Every compliance read is recorded: a player's wallet read through /admin/accounts as
    well as through /compliance/players/{id}/money."""
    await deposit(client, people, 100)
    compliance = auth(people["token"]["compliance"])
    operator = auth(people["token"]["operator"])
    wallets = await client.get(
        "/admin/accounts",
        params={"type": "player_wallet", "owner_id": people["id"]["player"]},
        headers=compliance,
    )
    assert wallets.status_code == 200, wallets.text
    [wallet] = wallets.json()
    assert (await client.get(f"/admin/accounts/{wallet['id']}", headers=compliance)).is_success
    statement = await client.get(f"/admin/accounts/{wallet['id']}/statement", headers=compliance)
    assert statement.status_code == 200, statement.text
    # operators' own reads of accounts are operations, not compliance reads
    assert (await client.get("/admin/accounts", headers=operator)).is_success
    log = (await client.get("/admin/access-log", headers=operator)).json()
    rows = [(row["actor"], row["role"], row["action"], row["target"]) for row in reversed(log)]
    clara = people["id"]["compliance"]
    assert rows == [
        (clara, "compliance", "list_accounts", None),
        (clara, "compliance", "read_account", wallet["id"]),
        (clara, "compliance", "account_statement", wallet["id"]),
    ]
    assert log[-1]["details"] == {
        "type": "player_wallet",
        "owner_id": people["id"]["player"],
        "limit": 100,
        "offset": 0,
        "found": 1,
    }


async def test_a_payment_is_credited_once_whatever_brings_it(client, settings, people):
    player = auth(people["token"]["player"])
    first = await post_event(client, settings, event(people, event_id="evt_a", payment_id="p1"))
    assert first.status_code == 200, first.text
    # a second provider event for the same payment, and an operator crediting it by hand
    again = await post_event(client, settings, event(people, event_id="evt_b", payment_id="p1"))
    refused = assert_error(again, 409, "payment_already_credited")
    assert refused["details"] == {"payment": "p1", "transfer_id": "payment:evt_a"}
    by_hand = await deposit(client, people, 5_000, payment_reference="p1")
    assert_error(by_hand, 409, "payment_already_credited")
    # the other way round: an operator's deposit of a payment, then the provider's event
    assert (await deposit(client, people, 700, payment_reference="p2")).status_code == 201
    late = await post_event(client, settings, event(people, event_id="evt_c", payment_id="p2"))
    assert_error(late, 409, "payment_already_credited")
    # replays of what was applied still answer as replays; other payments still credit
    replay = await post_event(client, settings, event(people, event_id="evt_a", payment_id="p1"))
    assert replay.status_code == 200 and replay.json()["replayed"] is True
    other = await post_event(client, settings, event(people, event_id="evt_d", payment_id="p3"))
    assert other.status_code == 200, other.text
    assert (await deposit(client, people, 100)).status_code == 201  # no payment reference
    assert (await deposit(client, people, 100)).status_code == 201
    wallet = (await client.get("/wallet", headers=player)).json()
    assert wallet["balance_cents"] == 5_000 + 700 + 5_000 + 200 and wallet["version"] == 5


async def test_concurrent_credits_of_one_payment_credit_it_once(client, settings, people):
    from tests.integration.tables.scenario import concurrently

    users = [people["id"]["player"], await create_user(settings, "pedro")]
    credits = [
        (
            f"/admin/wallets/{users[n % 2]}/deposits",
            {"amount_cents": 1_000, "payment_reference": "p9"},
            people["token"]["operator"],
            key(),
        )
        for n in range(6)
    ]
    responses = await concurrently(client, credits)
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201] + [409] * 5, [response.text for response in responses]
    assert {r.json()["code"] for r in responses if r.status_code == 409} == {
        "payment_already_credited"
    }
    operator = auth(people["token"]["operator"])
    cash_in = await client.get("/admin/accounts", params={"type": "cash_in"}, headers=operator)
    assert cash_in.json()[0]["balance_cents"] == -1_000
