"""The demo's audit of a finished table: its rounds from the round log, and each round's
seed checked from the public RNG record (as any player could)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import httpx
from sqlalchemy import select

from app.demo.report import RoundFacts, SeedCheck, round_facts

if TYPE_CHECKING:
    from app.db import Database

__all__ = ("check_seed", "table_rounds")


async def table_rounds(database: Database, table_id: uuid.UUID) -> list[RoundFacts]:
    """Every round of the table, read from its hash-chained log, with its RNG round."""
    from app.tables.models import Round, RoundLogEntry

    async with database.session() as session:
        rows = (
            await session.execute(
                select(Round.number, Round.rng_round_id, RoundLogEntry.kind, RoundLogEntry.body)
                .join(RoundLogEntry, RoundLogEntry.round_id == Round.id)
                .where(Round.table_id == table_id)
                .order_by(Round.number, RoundLogEntry.seq)
            )
        ).all()
    rng_ids = {number: rng_id for number, rng_id, _, _ in rows}
    facts = round_facts((kind, body) for _, _, kind, body in rows)
    for number, item in facts.items():
        item.rng_round_id = str(rng_ids[number]) if number in rng_ids else None
    return [facts[number] for number in sorted(facts)]


async def check_seed(
    http: httpx.AsyncClient,
    headers: dict[str, str],
    facts: RoundFacts,
    deck_size: int,
    players: int,
) -> SeedCheck:
    """Fetch the round's public RNG record and recompute its deal from the revealed seed."""
    from rng.verification import VerificationError, verify_round

    response = await http.get(f"/rng/rounds/{facts.rng_round_id}", headers=headers)
    response.raise_for_status()
    public = response.json()
    commitment, seed = public["commitment"], public["seed"]
    if seed is None:
        return SeedCheck(facts.number, commitment, None, False, "the seed was not revealed")
    try:
        result = verify_round(
            commitment,
            seed,
            public["client_seeds"],
            public["version"],
            deck_size,
            reshuffle_sizes=[len(order) for order in facts.reshuffles],
            player_count=players if facts.first_dealer is not None else None,
        )
    except VerificationError as error:
        return SeedCheck(facts.number, commitment, seed, False, f"{error.failure}: {error}")
    problems = []
    if list(result.deal) != facts.deal:
        problems.append("the deal differs from the logged deal")
    if [list(item.permutation) for item in result.reshuffles] != facts.reshuffles:
        problems.append("a reshuffle differs from the log")
    if facts.first_dealer is not None and (
        result.first_dealer is None or result.first_dealer.seat != facts.first_dealer
    ):
        problems.append("the first dealer differs from the log")
    if problems:
        return SeedCheck(facts.number, commitment, seed, False, "; ".join(problems))
    extra = f" and {len(facts.reshuffles)} reshuffle(s)" if facts.reshuffles else ""
    first = ", first dealer" if facts.first_dealer is not None else ""
    return SeedCheck(
        facts.number,
        commitment,
        seed,
        True,
        f"the seed matches its commitment and reproduces the deal{first}{extra}",
    )
