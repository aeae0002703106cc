"""What ``raiz demo`` prints: money, rounds, payouts, balances and seed checks, as text.

Pure functions over plain data (no I/O), so the wording can be tested on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.games.cards import card_str

__all__ = (
    "RoundFacts",
    "SeedCheck",
    "balance_lines",
    "brl",
    "percent",
    "round_facts",
    "round_line",
    "seed_lines",
)


def brl(cents: int, *, sign: bool = False) -> str:
    """Centavos as reais, e.g. ``R$ 1,234.50`` (``+R$ 13.00`` with ``sign``)."""
    prefix = ("+" if cents > 0 else "-" if cents < 0 else " ") if sign else ""
    if cents < 0 and not sign:
        prefix = "-"
    whole, part = divmod(abs(cents), 100)
    return f"{prefix}R$ {whole:,}.{part:02d}"


def percent(bps: int) -> str:
    """Basis points as a percentage, e.g. ``10.00 %``."""
    return f"{bps // 100}.{bps % 100:02d} %"


@dataclass
class RoundFacts:
    """One round as the round log recorded it."""

    number: int
    dealer: int | None = None
    played: list[int] = field(default_factory=list)
    ran: list[int] = field(default_factory=list)
    result: str | None = None
    winner: int | None = None
    out_of_turn: bool = False
    claimed_card: int | None = None
    lives: list[int] = field(default_factory=list)
    eliminated: list[int] = field(default_factory=list)
    deal: list[int] | None = None
    reshuffles: list[list[int]] = field(default_factory=list)
    first_dealer: int | None = None
    rng_round_id: str | None = None


def round_facts(entries: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[int, RoundFacts]:
    """Read a match's log entries (``(kind, body)``, rounds in order) into facts per round.

    Entries are routed by their own ``round`` field: the transaction that ends a round
    also starts the next one, so a round's log may end with the next ``round_started``.
    """
    rounds: dict[int, RoundFacts] = {}
    for kind, body in entries:
        number = body.get("round")
        if kind not in ("chance", "event") or not isinstance(number, int):
            continue
        facts = rounds.setdefault(number, RoundFacts(number))
        if kind == "chance":
            if body["kind"] == "deal":
                facts.deal = list(body["value"])
            elif body["kind"] == "reshuffle":
                facts.reshuffles.append(list(body["value"]))
            elif body["kind"] == "first_dealer":
                facts.first_dealer = int(body["value"])
            continue
        event = body["type"]
        if event == "round_started":
            facts.dealer = body["dealer"]
        elif event == "decisions_revealed":
            facts.played, facts.ran = list(body["mandar"]), list(body["ran"])
        elif event == "closed":
            facts.out_of_turn = bool(body["out_of_turn"])
            facts.claimed_card = body["claimed_card"]
        elif event == "round_ended":
            facts.result, facts.winner = body["result"], body["winner"]
            facts.lives = list(body["lives"])
        elif event == "eliminated":
            facts.eliminated = list(body["seats"])
    return rounds


OUTCOMES = {
    "closed": "{winner} closed (bateu)",
    "one_left": "{winner} wins the round: everybody else ran",
    "all_ran": "everybody ran: round annulled, 1 life each",
    "drawn": "stock exhausted: round drawn",
}


def round_line(facts: RoundFacts, names: Mapping[int, str], width: int) -> list[str]:
    """Two lines for a round: who dealt, played and ran, the outcome; then the lives."""

    def who(seats: Sequence[int]) -> str:
        return ", ".join(names[seat] for seat in seats) or "nobody"

    outcome = OUTCOMES.get(facts.result or "", "not finished").format(
        winner=names.get(facts.winner, "?") if facts.winner is not None else "?"
    )
    if facts.out_of_turn:
        claimed = f" with {card_str(facts.claimed_card)}" if facts.claimed_card is not None else ""
        outcome += f", out of turn{claimed} (bater fora da vez)"
    dealer = names.get(facts.dealer, "?") if facts.dealer is not None else "?"
    lives = "  ".join(
        f"{names[seat]} {count}{' (out)' if seat in facts.eliminated else ''}"
        for seat, count in enumerate(facts.lives)
    )
    return [
        f"  {facts.number:>2}  dealer {dealer:<{width}}  played: {who(facts.played)}"
        f"  ran: {who(facts.ran)}",
        f"      -> {outcome}",
        f"      lives: {lives}",
    ]


def balance_lines(
    names: Sequence[str],
    before: Sequence[int],
    after: Sequence[int],
    expected: Sequence[int],
    notes: Sequence[str],
) -> list[str]:
    """A table of balances before and after, the change, and whether it is the expected one."""
    width = max(len(name) for name in names)
    lines = [f"  {'':<{width}}  {'before':>11}  {'after':>11}  {'change':>11}"]
    for name, old, new, want, note in zip(names, before, after, expected, notes, strict=True):
        mark = "ok" if new == want else f"WRONG (expected {brl(want)})"
        lines.append(
            f"  {name:<{width}}  {brl(old):>11}  {brl(new):>11}  "
            f"{brl(new - old, sign=True):>11}  {note}  {mark}"
        )
    return lines


@dataclass(frozen=True)
class SeedCheck:
    """The public check of one round's seed."""

    number: int
    commitment: str
    seed: str | None
    passed: bool
    detail: str


def seed_lines(checks: Sequence[SeedCheck]) -> list[str]:
    """Commitment, revealed seed and PASS/FAIL for every round."""
    lines = []
    for check in checks:
        lines.append(f"  round {check.number:>2}  commitment {check.commitment}")
        lines.append(f"            seed       {check.seed or '(not revealed)'}")
        lines.append(f"            {'PASS' if check.passed else 'FAIL'}: {check.detail}")
    return lines
