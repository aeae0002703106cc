"""No seed before the reveal: not in any log line, error, metric, public record or column.

Each test runs a whole round (commit, client seeds, refused calls, streams) while collecting
every artefact that leaves the service, then reveals the seed and only then scans what was
collected for it, in hex, base64 and bytes forms. The mixed seed, from which every stream
derives, is held to the same standard.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from prometheus_client import REGISTRY, generate_latest

from app.logging import configure_logging
from rng.contract import RngServiceError
from rng.sealing import SealingError
from rng.streams import mix_client_seeds
from tests.helpers import auth
from tests.integration.rng.conftest import new_table, seed_forms

pytestmark = pytest.mark.asyncio


class CollectingHandler(logging.Handler):
    """Keeps every record as the service's own formatter renders it, and its raw fields."""

    def __init__(self, formatter: logging.Formatter | None) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(formatter)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        self.lines.append(repr(record.msg))
        self.lines.append(repr(record.args))


@contextmanager
def every_log_record() -> Iterator[CollectingHandler]:
    """JSON logs at DEBUG (SQLAlchemy logs each statement too, with its parameters hidden)."""
    root = logging.getLogger()
    # SQLAlchemy sets its own logger to WARNING; INFO makes it log its statements (and their
    # parameters, were they not hidden).
    sql = logging.getLogger("sqlalchemy.engine")
    previous_levels = root.level, sql.level
    configure_logging("DEBUG", json=True)
    sql.setLevel(logging.INFO)
    handler = CollectingHandler(root.handlers[0].formatter)
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(previous_levels[0])
        sql.setLevel(previous_levels[1])


def leaks(secret: bytes, artefacts: list[str]) -> list[str]:
    forms = seed_forms(secret)
    return [text for text in artefacts if any(form in text for form in forms)]


async def expect_refusal(call, artefacts: list[str]) -> None:
    try:
        await call
    except (RngServiceError, SealingError) as error:
        artefacts.extend([str(error), repr(error), repr(getattr(error, "details", None))])
    else:
        raise AssertionError("the call was expected to be refused")


async def test_no_seed_in_logs_errors_metrics_or_public_records_before_the_reveal(
    rng_transaction, raw
):
    artefacts: list[str] = []
    table = new_table()
    client_seeds = {"ana": b"ana's seed", "bia": bytes(range(16))}
    with every_log_record() as handler:
        async with rng_transaction() as service:
            committed = await service.commit_round(table, 1)
            artefacts.append(repr(committed))
            for contributor, client_seed in client_seeds.items():
                await service.add_client_seed(committed.id, contributor, client_seed)
            await expect_refusal(service.add_client_seed(committed.id, "ana", b"x"), artefacts)
            await expect_refusal(service.add_client_seed(committed.id, "c", b""), artefacts)
            await expect_refusal(service.commit_round(table, 1), artefacts)
            await expect_refusal(service.stream(committed.id, "bad label"), artefacts)
            await expect_refusal(service.fix_stream(table, 2, "deal", draw=1), artefacts)
            await expect_refusal(service.stream(uuid.uuid4(), "deal"), artefacts)
        async with rng_transaction() as service:
            artefacts.append(repr(await service.public_round(committed.id)))
            deal = await service.stream(committed.id, "deal")
            artefacts.extend([repr(deal), repr(deal.permutation(104))])
            dealer = await service.stream(committed.id, "first_dealer")
            artefacts.extend([repr(dealer), repr(dealer.randbelow(4))])
            await expect_refusal(service.add_client_seed(committed.id, "cai", b"x"), artefacts)
            artefacts.append(repr(await service.public_round(committed.id)))
            artefacts.append(repr(service))
        # A sealed seed copied to another round: the failure must not show either seed.
        row = await raw.fetchrow("SELECT * FROM rng.rounds WHERE id = $1", committed.id)
        moved = {**dict(row), "id": uuid.uuid4(), "table_ref": uuid.uuid4(), "commitment": "0" * 64}
        await raw.execute(
            f"INSERT INTO rng.rounds ({', '.join(moved)}) "
            f"VALUES ({', '.join(f'${i}' for i in range(1, len(moved) + 1))})",
            *moved.values(),
        )
        async with rng_transaction() as service:
            await expect_refusal(service.stream(moved["id"], "deal"), artefacts)
        artefacts.append(generate_latest(REGISTRY).decode())
        before_reveal = len(handler.lines)
        assert before_reveal > 0
        async with rng_transaction() as service:
            seed = await service.reveal(committed.id)
            revealed = await service.public_round(committed.id)

    mixed = mix_client_seeds(seed, [client_seeds[name] for name in sorted(client_seeds)])
    logged_before = handler.lines[:before_reveal]
    assert leaks(seed, logged_before) == []
    assert leaks(mixed, logged_before) == []
    assert leaks(seed, artefacts) == []
    assert leaks(mixed, artefacts) == []
    # The scan can see a seed: after the reveal the public record shows it.
    assert leaks(seed, [repr(revealed)]) != []
    # SQLAlchemy did log the statements, and never their parameters: not even the reveal's
    # INSERT, whose parameter is the (by then public) seed, shows it.
    assert any("INSERT INTO rng.rounds" in line for line in logged_before)
    assert any("INSERT INTO rng.reveals" in line for line in handler.lines[before_reveal:])
    assert any("SQL parameters hidden" in line for line in handler.lines)
    assert leaks(seed, handler.lines) == []


async def test_no_column_of_any_table_holds_the_seed_before_the_reveal(rng_transaction, raw):
    table = new_table()
    async with rng_transaction(allow_fixed=True) as service:
        await service.fix_stream(table, 1, "reshuffle/1", permutation=[1, 0])
        committed = await service.commit_round(table, 1)
        await service.add_client_seed(committed.id, "ana", b"ana's seed")
    async with rng_transaction(allow_fixed=True) as service:
        (await service.stream(committed.id, "deal")).permutation(104)
        (await service.stream(committed.id, "reshuffle/1")).permutation(2)
    snapshot = await every_value(raw)
    assert any(committed.commitment in str(value) for value in snapshot)

    async with rng_transaction() as service:
        seed = await service.reveal(committed.id)
    mixed = mix_client_seeds(seed, [b"ana's seed"])
    for secret in (seed, mixed):
        forms = seed_forms(secret)
        for value in snapshot:
            text = str(value)
            if isinstance(value, bytes):
                assert secret not in value
                text = value.hex()
            assert not any(form in text for form in forms)
    # After the reveal the seed is stored in the clear, in rng.reveals only.
    holders = [
        value for value in await every_value(raw) if isinstance(value, bytes) and seed in value
    ]
    assert holders == [seed]


async def every_value(raw) -> list[object]:
    """Every column value of every table in every schema we own (and public)."""
    tables = await raw.fetch(
        "SELECT schemaname, tablename FROM pg_tables "
        "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
    )
    values: list[object] = []
    for table in tables:
        for row in await raw.fetch(f'SELECT * FROM "{table["schemaname"]}"."{table["tablename"]}"'):
            values.extend(row.values())
    return values


async def test_a_database_error_while_dealing_logs_no_card_of_the_deal(client, settings):
    """A statement that fails while a deal is being recorded (a statement timeout, a
    deadlock, a dropped connection...) is logged with its traceback; the deck it was writing
    (the ``chance`` entry, the ``dealt`` event, the table's state) must not be in that log
    line, because the round is still in play: SQLAlchemy's error message would otherwise carry
    the statement's parameters."""
    from tests.integration.tables.helpers import create_table, operator, player
    from tests.integration.tables.scenario import fix_streams, seat, sql

    deal = random.Random(2026).sample(range(104), 104)
    op = await operator(client, settings)
    (_, first), (_, second) = [
        await player(client, settings, name, 1_000, op) for name in ("ana", "bia")
    ]
    table = await create_table(client, first, seat_count=2, entry_cents=100)
    await seat(client, first, table["id"])
    await fix_streams(settings, table["id"], 1, dealer=0, permutation=deal)
    # The database refuses the deal's log entry, as a failing statement would.
    await sql(
        settings,
        "CREATE FUNCTION test_refuse_deal() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.kind = 'chance' AND NEW.body ->> 'label' = 'deal' THEN "
        "RAISE EXCEPTION 'test: the deal entry is refused'; END IF; RETURN NEW; END $$",
    )
    await sql(
        settings,
        "CREATE TRIGGER test_refuse_deal BEFORE INSERT ON game.round_log "
        "FOR EACH ROW EXECUTE FUNCTION test_refuse_deal()",
    )
    root = logging.getLogger()
    handler = CollectingHandler(root.handlers[0].formatter)
    root.addHandler(handler)
    try:
        response = await client.post(f"/tables/{table['id']}/seat", headers=auth(second))
    finally:
        root.removeHandler(handler)
    assert response.status_code == 500, response.text
    # The failure was logged with its traceback, so the scan below looks at the error.
    assert any("the deal entry is refused" in line for line in handler.lines)
    runs = [", ".join(map(str, deal[i : i + 4])) for i in range(len(deal) - 3)]
    leaked = [line for line in handler.lines if any(run in line for run in runs)]
    assert leaked == []
