"""The RNG routes: a round's record (seed only after the reveal), algorithms, verification."""

from __future__ import annotations

import uuid

import pytest

from rng.streams import commitment
from tests.helpers import assert_error, auth, create_user, login
from tests.integration.rng.conftest import seed_forms

pytestmark = pytest.mark.asyncio


class RoundDriver:
    """Plays the game service's part with the app's RNG services (and so its sealer).

    The test client runs the app in its own event loop, so the driver has its own pool.
    """

    def __init__(self, app, database) -> None:
        self.database = database
        self.services = app.state.rng_services

    async def run(self, method: str, *args):
        async with self.database.session() as session:
            result = await getattr(self.services.for_session(session), method)(*args)
            await session.commit()
            return result


@pytest.fixture
async def token(client, settings) -> str:
    await create_user(settings, "ana")
    return await login(client, "ana")


async def test_round_record_needs_a_token(client):
    response = await client.get(f"/rng/rounds/{uuid.uuid4()}")
    assert_error(response, 401, "not_authenticated")


async def test_unknown_round_is_404(client, token):
    round_id = uuid.uuid4()
    body = assert_error(
        await client.get(f"/rng/rounds/{round_id}", headers=auth(token)), 404, "round_not_found"
    )
    assert body["details"] == {"round_id": str(round_id)}
    assert_error(await client.get("/rng/rounds/not-a-uuid", headers=auth(token)), 404, "not_found")


async def test_seed_is_hidden_until_the_reveal_and_no_response_shows_it_before(
    client, token, database
):
    driver = RoundDriver(client.app, database)
    table = uuid.uuid4()
    committed = await driver.run("commit_round", table, 1)
    responses: list[str] = []

    async def read_round() -> dict:
        response = await client.get(f"/rng/rounds/{committed.id}", headers=auth(token))
        assert response.status_code == 200, response.text
        responses.append(response.text + repr(response.headers))
        return dict(response.json())

    before_deal = await read_round()
    assert before_deal["commitment"] == committed.commitment
    assert before_deal["version"] == "raiz-rng/1"
    assert before_deal["table_id"] == str(table)
    assert (before_deal["seed"], before_deal["revealed"], before_deal["revealed_at"]) == (
        None,
        False,
        None,
    )
    assert before_deal["streams"] == []

    await driver.run("add_client_seed", committed.id, "seat-1", b"bia")
    await driver.run("add_client_seed", committed.id, "seat-0", b"ana")
    async with driver.database.session() as session:
        service = driver.services.for_session(session)
        deal = (await service.stream(committed.id, "deal")).permutation(104)
        await session.commit()
    after_deal = await read_round()
    assert after_deal["client_seeds"] == [b"ana".hex(), b"bia".hex()]
    assert after_deal["contributors"] == ["seat-0", "seat-1"]
    assert [stream["label"] for stream in after_deal["streams"]] == ["deal"]
    assert after_deal["seed"] is None

    metrics = await client.get("/metrics")
    responses.append(metrics.text)
    wrong = await client.post(
        "/rng/verify",
        json={"commitment": committed.commitment, "seed": "00" * 32, "deck_size": 104},
    )
    assert_error(wrong, 422, "commitment_mismatch")
    responses.append(wrong.text)

    seed = await driver.run("reveal", committed.id)
    revealed = await read_round()
    assert revealed["seed"] == seed.hex()
    assert revealed["revealed"] is True
    assert revealed["revealed_at"] is not None
    assert commitment(bytes.fromhex(revealed["seed"])) == revealed["commitment"]

    forms = seed_forms(seed)
    assert [text for text in responses[:-1] if any(form in text for form in forms)] == []

    verified = await client.post(
        "/rng/verify",
        json={
            "commitment": revealed["commitment"],
            "seed": revealed["seed"],
            "client_seeds": revealed["client_seeds"],
            "version": revealed["version"],
            "deck_size": 104,
            "reshuffle_sizes": [57],
            "player_count": 4,
        },
    )
    assert verified.status_code == 200, verified.text
    assert verified.json()["deal"] == deal
    assert verified.json()["reshuffles"][0]["label"] == "reshuffle/1"
    assert 0 <= verified.json()["first_dealer"]["seat"] < 4


async def test_algorithms_are_public(client):
    response = await client.get("/rng/algorithms")
    assert response.status_code == 200, response.text
    (algorithm,) = response.json()
    assert algorithm["version"] == "raiz-rng/1"
    assert algorithm["current"] is True
    assert algorithm["seed_length_bytes"] == 32
    assert algorithm["max_client_seeds"] == 16
    assert "drbg.Generate(256)" in algorithm["formulas"]["stream"]
    assert algorithm["document"] == "docs/rng.md"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"version": "raiz-rng/0"}, 422, "unknown_version"),
        ({"seed": "00" * 32}, 422, "commitment_mismatch"),
        ({"seed": "zz" * 32}, 400, "validation_error"),
        ({"seed": "00" * 31}, 400, "validation_error"),
        ({"deck_size": 0}, 400, "validation_error"),
        ({"deck_size": 1025}, 400, "validation_error"),
        ({"reshuffle_sizes": [1] * 33}, 400, "validation_error"),
        ({"client_seeds": [""]}, 400, "validation_error"),
        ({"client_seeds": ["aa"] * 17}, 400, "validation_error"),
        ({"player_count": 65}, 400, "validation_error"),
        ({"unknown": 1}, 400, "validation_error"),
        # a number is a JSON number: no string or float stands in for one
        ({"deck_size": "52"}, 400, "validation_error"),
        ({"deck_size": 52.0}, 400, "validation_error"),
        ({"player_count": "4"}, 400, "validation_error"),
        ({"reshuffle_sizes": ["5"]}, 400, "validation_error"),
        ({"reshuffle_sizes": [5.0]}, 400, "validation_error"),
        # hex ends where it ends: Python's $ matches before a final newline
        ({"seed": bytes(range(32)).hex() + "\n"}, 400, "validation_error"),
        ({"commitment": commitment(bytes(range(32))) + "\n"}, 400, "validation_error"),
        ({"client_seeds": ["aa\n"]}, 400, "validation_error"),
    ],
)
async def test_verify_refusals(client, body, status, code):
    seed = bytes(range(32))
    request = {"commitment": commitment(seed), "seed": seed.hex(), "deck_size": 52, **body}
    assert_error(await client.post("/rng/verify", json=request), status, code)


async def test_verify_is_public_and_needs_no_database(client):
    seed = bytes(range(32))
    response = await client.post(
        "/rng/verify", json={"commitment": commitment(seed), "seed": seed.hex(), "deck_size": 3}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert sorted(body["deal"]) == [0, 1, 2]
    assert body["reshuffles"] == [] and body["first_dealer"] is None
