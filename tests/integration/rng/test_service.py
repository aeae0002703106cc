"""The RNG service against PostgreSQL: commit, client seeds, streams, reveal, verification."""

from __future__ import annotations

import asyncio
import hashlib
import uuid

import asyncpg
import pytest
from sqlalchemy import func, select

import rng.service
from rng.contract import RngErrorCode, RngServiceError, associated_data
from rng.sealing import SealingError, SeedSealer
from rng.service import RngService
from rng.streams import RandomStream, commitment, new_round_seed
from rng.verification import verify_round
from tests.helpers import until_others_wait_on_locks
from tests.integration.rng.conftest import KEY_1, KEY_2, SEALER, new_table

pytestmark = pytest.mark.asyncio


async def refused(call, code: RngErrorCode) -> RngServiceError:
    with pytest.raises(RngServiceError) as caught:
        await call
    assert caught.value.code is code, caught.value
    return caught.value


# --- commitment before the deal, reveal after -----------------------------------------------


async def test_commitment_is_stored_before_the_deal_and_the_revealed_seed_hashes_to_it(
    rng_transaction, raw
):
    table = new_table()
    async with rng_transaction() as service:
        committed = await service.commit_round(table, 1)
    assert committed.version == "raiz-rng/1"
    assert len(committed.commitment) == 64

    # Committed and readable by anyone, while nothing has been drawn yet.
    row = await raw.fetchrow("SELECT * FROM rng.rounds WHERE id = $1", committed.id)
    assert row["commitment"] == committed.commitment
    assert (row["table_ref"], row["round_number"], row["version"]) == (table, 1, "raiz-rng/1")
    assert await raw.fetchval("SELECT count(*) FROM rng.drawn_streams") == 0
    async with rng_transaction() as service:
        public = await service.public_round(committed.id)
    assert public.commitment == committed.commitment
    assert public.seed is None and public.revealed_at is None and public.streams == ()

    async with rng_transaction() as service:
        deal = (await service.stream(committed.id, "deal")).permutation(104)
    drawn = await raw.fetch("SELECT label, fixed, drawn_at FROM rng.drawn_streams")
    assert [(r["label"], r["fixed"]) for r in drawn] == [("deal", False)]
    assert drawn[0]["drawn_at"] > row["committed_at"]

    async with rng_transaction() as service:
        seed = await service.reveal(committed.id)
        public = await service.public_round(committed.id)
    assert commitment(seed) == committed.commitment
    assert hashlib.sha256(b"raiz-rng/1\x00commit\x00" + seed).hexdigest() == committed.commitment
    assert public.seed == seed.hex()
    assert public.revealed_at is not None
    verified = verify_round(public.commitment, public.seed, [], public.version, 104)
    assert list(verified.deal) == deal


@pytest.mark.parametrize(
    "client_seeds",
    [
        {},
        {"seat-2": b"carla's", "seat-0": bytes.fromhex("00ff"), "seat-1": b"b" * 64},
    ],
)
async def test_the_service_deals_what_public_verification_recomputes(rng_transaction, client_seeds):
    async with rng_transaction() as service:
        round_id = (await service.commit_round(new_table(), 7)).id
    for contributor, client_seed in client_seeds.items():  # arrival order is not mixing order
        async with rng_transaction() as service:
            await service.add_client_seed(round_id, contributor, client_seed)
    async with rng_transaction() as service:
        deal = (await service.stream(round_id, "deal")).permutation(104)
        seat = (await service.stream(round_id, "first_dealer")).randbelow(4)
        reshuffle = (await service.stream(round_id, "reshuffle/1")).permutation(57)
    async with rng_transaction() as service:
        await service.reveal(round_id)
        public = await service.public_round(round_id)

    assert list(public.contributors) == sorted(client_seeds)
    assert list(public.client_seeds) == [client_seeds[name].hex() for name in sorted(client_seeds)]
    assert [stream.label for stream in public.streams] == ["deal", "first_dealer", "reshuffle/1"]
    assert public.seed is not None
    result = verify_round(
        public.commitment,
        public.seed,
        public.client_seeds,
        public.version,
        104,
        reshuffle_sizes=[57],
        player_count=4,
    )
    assert list(result.deal) == deal
    assert result.first_dealer is not None and result.first_dealer.seat == seat
    assert list(result.reshuffles[0].permutation) == reshuffle


async def test_a_stream_drawn_again_starts_over_and_is_recorded_once(rng_transaction, raw):
    async with rng_transaction() as service:
        round_id = (await service.commit_round(new_table(), 1)).id
        first = await service.stream(round_id, "deal")
        again = await service.stream(round_id, "deal")
        assert isinstance(first, RandomStream)
        assert first.permutation(52) == again.permutation(52)
    async with rng_transaction() as service:
        assert (await service.stream(round_id, "deal")).permutation(52) == (
            await service.stream(round_id, "deal")
        ).permutation(52)
    assert await raw.fetchval("SELECT count(*) FROM rng.drawn_streams") == 1


async def test_reveal_is_idempotent_and_ends_the_round(rng_transaction, raw):
    async with rng_transaction() as service:
        round_id = (await service.commit_round(new_table(), 1)).id
    async with rng_transaction() as service:
        seed = await service.reveal(round_id)
    async with rng_transaction() as service:
        assert await service.reveal(round_id) == seed
        await refused(service.stream(round_id, "deal"), RngErrorCode.ROUND_REVEALED)
        error = await refused(
            service.add_client_seed(round_id, "late", b"x"), RngErrorCode.CLIENT_SEEDS_CLOSED
        )
        assert error.details == {"reason": "revealed"}
    assert await raw.fetchval("SELECT count(*) FROM rng.reveals") == 1
    # The sealed row was never touched.
    sealed = await raw.fetchrow("SELECT sealed_seed FROM rng.rounds WHERE id = $1", round_id)
    assert seed not in sealed["sealed_seed"]


async def test_unknown_rounds_and_bad_arguments_are_refused(rng_transaction):
    unknown = uuid.uuid4()
    async with rng_transaction() as service:
        for call in (
            service.stream(unknown, "deal"),
            service.reveal(unknown),
            service.public_round(unknown),
            service.add_client_seed(unknown, "ana", b"x"),
        ):
            error = await refused(call, RngErrorCode.ROUND_NOT_FOUND)
            assert error.details == {"round_id": str(unknown)}
        await refused(service.commit_round(new_table(), -1), RngErrorCode.INVALID_ARGUMENT)
        await refused(service.commit_round(new_table(), 2**31), RngErrorCode.INVALID_ARGUMENT)
        await refused(service.commit_round(new_table(), True), RngErrorCode.INVALID_ARGUMENT)
        await refused(service.commit_round("table", 1), RngErrorCode.INVALID_ARGUMENT)
        await refused(service.reveal(str(unknown)), RngErrorCode.INVALID_ARGUMENT)
        round_id = (await service.commit_round(new_table(), 1)).id
        for label in ("", "de al", "x" * 65, "baralho/ação"):
            await refused(service.stream(round_id, label), RngErrorCode.LABEL_INVALID)


# --- uniqueness ------------------------------------------------------------------------------


async def test_one_round_per_table_and_number(rng_transaction, raw):
    table = new_table()
    async with rng_transaction() as service:
        first = await service.commit_round(table, 3)
        error = await refused(service.commit_round(table, 3), RngErrorCode.ROUND_EXISTS)
        assert error.details["round_id"] == str(first.id)
        # The refusal left the transaction usable.
        await service.commit_round(table, 4)
        await service.commit_round(new_table(), 3)
    assert await raw.fetchval("SELECT count(*) FROM rng.rounds") == 3


async def test_seeds_are_unique_through_the_commitment_constraint(
    rng_transaction, raw, monkeypatch
):
    repeated, fresh = new_round_seed(), new_round_seed()
    draws = iter([repeated, repeated, fresh])
    monkeypatch.setattr(rng.service, "new_round_seed", lambda version: next(draws))
    async with rng_transaction() as service:
        first = await service.commit_round(new_table(), 1)
        second = await service.commit_round(new_table(), 1)
    # The second round drew the same seed, could not store it, and drew again.
    assert first.commitment == commitment(repeated)
    assert second.commitment == commitment(fresh)
    monkeypatch.undo()
    row = await raw.fetchrow("SELECT * FROM rng.rounds WHERE id = $1", first.id)
    with pytest.raises(asyncpg.UniqueViolationError, match="uq_rounds_commitment"):
        await raw.execute(
            "INSERT INTO rng.rounds (id, table_ref, round_number, version, commitment, "
            "seal_key_id, seal_nonce, sealed_seed, committed_at) "
            "VALUES ($1, $2, 1, $3, $4, $5, $6, $7, now())",
            uuid.uuid4(),
            uuid.uuid4(),
            row["version"],
            row["commitment"],
            row["seal_key_id"],
            row["seal_nonce"],
            row["sealed_seed"],
        )


# --- sealing ---------------------------------------------------------------------------------


async def copy_round(raw, source_id: uuid.UUID, **overrides) -> uuid.UUID:
    """Insert a new round row with another round's columns (inserting is allowed)."""
    row = dict(await raw.fetchrow("SELECT * FROM rng.rounds WHERE id = $1", source_id))
    row.update(id=uuid.uuid4(), table_ref=uuid.uuid4(), commitment=hashlib.sha256(b"x").hexdigest())
    row.update(overrides)
    columns = list(row)
    await raw.execute(
        f"INSERT INTO rng.rounds ({', '.join(columns)}) "
        f"VALUES ({', '.join(f'${i}' for i in range(1, len(columns) + 1))})",
        *row.values(),
    )
    return row["id"]


async def test_a_sealed_seed_moved_to_another_round_does_not_open(rng_transaction, raw):
    async with rng_transaction() as service:
        original = (await service.commit_round(new_table(), 1)).id
    moved = await copy_round(raw, original)
    async with rng_transaction() as service:
        with pytest.raises(SealingError, match="did not open"):
            await service.stream(moved, "deal")
        with pytest.raises(SealingError, match="did not open"):
            await service.reveal(moved)
        # The original still opens.
        await service.stream(original, "deal")


async def test_a_seal_that_opens_but_does_not_match_the_commitment_is_refused(rng_transaction, raw):
    async with rng_transaction() as service:
        original = (await service.commit_round(new_table(), 1)).id
    forged_id = uuid.uuid4()
    sealed = SEALER.seal(new_round_seed(), associated_data(forged_id))
    await copy_round(
        raw,
        original,
        id=forged_id,
        seal_key_id=sealed.key_id,
        seal_nonce=sealed.nonce,
        sealed_seed=sealed.ciphertext,
    )
    async with rng_transaction() as service:
        with pytest.raises(SealingError, match="does not match its commitment"):
            await service.reveal(forged_id)


async def test_key_rotation_keeps_old_rounds_open(rng_transaction, raw):
    only_k1 = SeedSealer({"k1": KEY_1}, "k1")
    rotated = SeedSealer({"k1": KEY_1, "k2": KEY_2}, "k2")
    only_k2 = SeedSealer({"k2": KEY_2}, "k2")
    async with rng_transaction(only_k1) as service:
        old = await service.commit_round(new_table(), 1)
    async with rng_transaction(rotated) as service:
        new = await service.commit_round(new_table(), 1)
    key_ids = dict(await raw.fetch("SELECT id, seal_key_id FROM rng.rounds"))
    assert key_ids == {old.id: "k1", new.id: "k2"}
    async with rng_transaction(only_k2) as service:
        with pytest.raises(SealingError, match="unknown key id 'k1'"):
            await service.reveal(old.id)
        assert commitment(await service.reveal(new.id)) == new.commitment
    async with rng_transaction(rotated) as service:
        await service.stream(old.id, "deal")
        assert commitment(await service.reveal(old.id)) == old.commitment


# --- client seeds ----------------------------------------------------------------------------


async def test_client_seed_rules(rng_transaction):
    async with rng_transaction() as service:
        round_id = (await service.commit_round(new_table(), 1)).id
    async with rng_transaction() as service:
        for bad_seed in (b"", b"x" * 65, "text", None):
            await refused(
                service.add_client_seed(round_id, "ana", bad_seed),
                RngErrorCode.CLIENT_SEED_INVALID,
            )
        for bad_contributor in ("", "a b", "x" * 65, "joão", None):
            await refused(
                service.add_client_seed(round_id, bad_contributor, b"x"),
                RngErrorCode.CONTRIBUTOR_INVALID,
            )
        await service.add_client_seed(round_id, "ana", b"x" * 64)
        await service.add_client_seed(round_id, "bia", b"y")
        error = await refused(
            service.add_client_seed(round_id, "ana", b"z"), RngErrorCode.ALREADY_CONTRIBUTED
        )
        assert error.details == {"contributor": "ana"}
    async with rng_transaction() as service:
        public = await service.public_round(round_id)
        assert public.contributors == ("ana", "bia")
        assert public.client_seeds == ((b"x" * 64).hex(), b"y".hex())


async def test_at_most_the_versions_number_of_client_seeds(rng_transaction):
    async with rng_transaction() as service:
        round_id = (await service.commit_round(new_table(), 1)).id
        for number in range(16):
            await service.add_client_seed(round_id, f"player-{number:02d}", bytes([number + 1]))
        error = await refused(
            service.add_client_seed(round_id, "player-16", b"x"),
            RngErrorCode.TOO_MANY_CLIENT_SEEDS,
        )
        assert error.details == {"max_client_seeds": 16}


async def test_client_seeds_close_at_the_first_draw(rng_transaction):
    async with rng_transaction() as service:
        round_id = (await service.commit_round(new_table(), 1)).id
        await service.add_client_seed(round_id, "ana", b"before")
    async with rng_transaction() as service:
        await service.stream(round_id, "first_dealer")
    async with rng_transaction() as service:
        error = await refused(
            service.add_client_seed(round_id, "bia", b"after"), RngErrorCode.CLIENT_SEEDS_CLOSED
        )
        assert error.details == {"reason": "drawn"}
        public = await service.public_round(round_id)
        assert public.contributors == ("ana",)


async def test_a_draw_and_a_client_seed_on_one_round_take_turns(
    rng_transaction, database, database_url
):
    async with rng_transaction() as service:
        round_id = (await service.commit_round(new_table(), 1)).id
    async with database.session() as dealer_session, database.session() as player_session:
        dealer = RngService(dealer_session, SEALER, allow_fixed=False)
        player = RngService(player_session, SEALER, allow_fixed=False)
        await dealer.stream(round_id, "deal")
        late = asyncio.create_task(player.add_client_seed(round_id, "late", b"x"))
        await until_others_wait_on_locks(database_url)
        assert not late.done(), "the client seed must wait for the draw's transaction"
        await dealer_session.commit()
        with pytest.raises(RngServiceError) as caught:
            await late
        assert caught.value.code is RngErrorCode.CLIENT_SEEDS_CLOSED


async def test_a_deal_waits_for_a_client_seed_in_flight_and_mixes_it(
    rng_transaction, database, database_url
):
    async with rng_transaction() as service:
        round_id = (await service.commit_round(new_table(), 1)).id
    async with database.session() as dealer_session, database.session() as player_session:
        dealer = RngService(dealer_session, SEALER, allow_fixed=False)
        player = RngService(player_session, SEALER, allow_fixed=False)
        await player.add_client_seed(round_id, "ana", b"just in time")
        deal = asyncio.create_task(dealer.stream(round_id, "deal"))
        await until_others_wait_on_locks(database_url)
        assert not deal.done(), "the draw must wait for the client seed's transaction"
        await player_session.commit()
        order = (await deal).permutation(52)
        await dealer_session.commit()
    async with rng_transaction() as service:
        seed = await service.reveal(round_id)
    expected = verify_round(commitment(seed), seed.hex(), [b"just in time".hex()], "raiz-rng/1", 52)
    assert list(expected.deal) == order


# --- fixed streams (test only) ---------------------------------------------------------------


async def test_fixed_streams_are_refused_unless_allowed(rng_transaction, raw):
    async with rng_transaction(allow_fixed=False) as service:
        await refused(
            service.fix_stream(new_table(), 1, "deal", permutation=[1, 0]),
            RngErrorCode.FIXED_DECKS_DISABLED,
        )
    assert await raw.fetchval("SELECT count(*) FROM rng.fixed_streams") == 0


async def test_fixed_streams_are_used_and_flagged_when_allowed(rng_transaction, raw):
    from prometheus_client import REGISTRY

    def fixed_used(kind: str) -> float:
        value = REGISTRY.get_sample_value("raiz_rng_fixed_streams_used_total", {"kind": kind})
        return value or 0.0

    table = new_table()
    before = fixed_used("deal"), fixed_used("first_dealer")
    async with rng_transaction(allow_fixed=True) as service:
        # Registered before the round exists, as a test sets up a table.
        await service.fix_stream(table, 1, "deal", permutation=[2, 0, 3, 1])
        await service.fix_stream(table, 1, "first_dealer", draw=3)
        round_id = (await service.commit_round(table, 1)).id
    async with rng_transaction(allow_fixed=True) as service:
        assert (await service.stream(round_id, "deal")).permutation(4) == [2, 0, 3, 1]
        assert (await service.stream(round_id, "first_dealer")).randbelow(4) == 3
        # Labels without a script stay seeded.
        assert isinstance(await service.stream(round_id, "reshuffle/1"), RandomStream)
        public = await service.public_round(round_id)
    assert {(s.label, s.fixed) for s in public.streams} == {
        ("deal", True),
        ("first_dealer", True),
        ("reshuffle/1", False),
    }
    assert (fixed_used("deal"), fixed_used("first_dealer")) == (before[0] + 1, before[1] + 1)
    flagged = await raw.fetch("SELECT label FROM rng.drawn_streams WHERE fixed ORDER BY label")
    assert [row["label"] for row in flagged] == ["deal", "first_dealer"]

    # A fixed draw cannot be replayed once fixed decks are off.
    async with rng_transaction(allow_fixed=False) as service:
        await refused(service.stream(round_id, "deal"), RngErrorCode.FIXED_DECKS_DISABLED)


async def test_a_registered_fixed_stream_is_ignored_when_not_allowed(rng_transaction, raw):
    table = new_table()
    async with rng_transaction(allow_fixed=True) as service:
        await service.fix_stream(table, 1, "deal", permutation=[0, 1, 2])
    async with rng_transaction(allow_fixed=False) as service:
        round_id = (await service.commit_round(table, 1)).id
        chance = await service.stream(round_id, "deal")
        assert isinstance(chance, RandomStream)
    assert await raw.fetchval("SELECT fixed FROM rng.drawn_streams") is False
    # And it stays seeded when fixed decks are allowed again: history does not change.
    async with rng_transaction(allow_fixed=True) as service:
        assert isinstance(await service.stream(round_id, "deal"), RandomStream)


async def test_fixed_stream_rules(rng_transaction):
    table = new_table()
    async with rng_transaction(allow_fixed=True) as service:
        for script in (
            {},
            {"permutation": [0, 1], "draw": 1},
            {"permutation": []},
            {"permutation": [0, 0]},
            {"permutation": [1, 2]},
            {"permutation": (1, 0)},
            {"permutation": [0, True]},
            {"draw": -1},
            {"draw": 2**63},
            {"draw": False},
        ):
            await refused(
                service.fix_stream(table, 1, "deal", **script), RngErrorCode.FIXED_STREAM_INVALID
            )
        await refused(service.fix_stream(table, 1, "bad label", draw=1), RngErrorCode.LABEL_INVALID)
        await service.fix_stream(table, 1, "deal", permutation=[1, 0])
        await refused(
            service.fix_stream(table, 1, "deal", permutation=[0, 1]),
            RngErrorCode.FIXED_STREAM_EXISTS,
        )
        round_id = (await service.commit_round(table, 2)).id
        await service.stream(round_id, "deal")
        await refused(
            service.fix_stream(table, 2, "deal", permutation=[0, 1]),
            RngErrorCode.STREAM_ALREADY_DRAWN,
        )


# --- append-only tables ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE rng.rounds SET round_number = round_number + 1",
        "UPDATE rng.rounds SET seal_key_id = 'k2'",
        "DELETE FROM rng.rounds",
        "TRUNCATE rng.rounds CASCADE",
        "UPDATE rng.client_seeds SET client_seed = '\\x00'",
        "DELETE FROM rng.client_seeds",
        "TRUNCATE rng.client_seeds",
        "UPDATE rng.drawn_streams SET fixed = true",
        "DELETE FROM rng.drawn_streams",
        "TRUNCATE rng.drawn_streams",
        "UPDATE rng.reveals SET revealed_at = now()",
        "DELETE FROM rng.reveals",
        "TRUNCATE rng.reveals",
        "UPDATE rng.fixed_streams SET draw = 0",
        "DELETE FROM rng.fixed_streams",
        "TRUNCATE rng.fixed_streams",
    ],
)
async def test_rng_tables_are_append_only(rng_transaction, raw, statement):
    table = new_table()
    async with rng_transaction(allow_fixed=True) as service:
        await service.fix_stream(table, 1, "first_dealer", draw=1)
        round_id = (await service.commit_round(table, 1)).id
        await service.add_client_seed(round_id, "ana", b"x")
        await service.stream(round_id, "deal")
        await service.reveal(round_id)
    with pytest.raises(asyncpg.RestrictViolationError, match="is append-only"):
        await raw.execute(statement)


async def test_every_worker_dates_a_round_on_the_databases_clock(rng_transaction, monkeypatch):
    # Committed on a worker an hour ahead, the deal and a client seed on one an hour late,
    # the reshuffle and the reveal on the first again: the dates follow what happened (the
    # public record lists the draws by date), each the database's clock at the time.
    import datetime as dt

    from tests.helpers import worker_clock_off

    def worker(offset_hours: int) -> None:
        monkeypatch.undo()
        worker_clock_off(monkeypatch, dt.timedelta(hours=offset_hours))

    worker(+1)
    async with rng_transaction() as service:
        commitment = await service.commit_round(new_table(), 1)
    worker(-1)
    async with rng_transaction() as service:
        await service.add_client_seed(commitment.id, "ana", bytes(range(16)))
        await service.stream(commitment.id, "deal")
    worker(+1)
    async with rng_transaction() as service:
        await service.stream(commitment.id, "reshuffle-1")
        await service.reveal(commitment.id)
        public = await service.public_round(commitment.id)
        database_now = (await service._session.execute(select(func.now()))).scalar_one()
    monkeypatch.undo()
    assert [stream.label for stream in public.streams] == ["deal", "reshuffle-1"]
    dates = [public.committed_at, *(stream.drawn_at for stream in public.streams)]
    assert public.revealed_at is not None
    dates.append(public.revealed_at)
    assert dates == sorted(dates)
    assert all(abs((database_now - moment).total_seconds()) < 60 for moment in dates)
    assert public.committed_at == commitment.committed_at
