"""Command-line tools of the rules engine, as click commands for the top-level ``raiz`` group.

``raiz rules check-hand``: can this hand close? (compliance: "I could have closed" disputes)
``raiz simulate``: bot-versus-bot matches and their statistics.

The lead's ``app/cli.py`` adds them with ``main.add_command(rules_group)`` and
``main.add_command(make_simulate_command(stream_chance_factory(rng.streams.derive_stream)))``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click

from app.games.cards import CARDS_PER_DECK, card_str, parse_card, parse_cards, wild_ids
from app.games.errors import GameError
from app.games.melds import MeldRules
from app.games.options import resolve_options
from app.games.simulate import ChanceSourceFactory, simulate, stand_in_chance_factory
from app.games.solver import closing_discards, find_close

__all__ = (
    "check_hand",
    "check_hand_answer",
    "make_simulate_command",
    "parse_overrides",
    "rules_group",
    "simulate_command",
)

EXIT_BAD_INPUT = 2
"""Exit status for bad input (unknown card, option or value, wrong hand size)."""


def parse_overrides(pairs: Sequence[str]) -> dict[str, str]:
    """``["name=value", ...]`` -> ``{name: value}``."""
    overrides = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise GameError("invalid_option_value", f"expected NAME=VALUE, got {pair!r}")
        overrides[name.strip()] = value.strip()
    return overrides


def check_hand_answer(
    preset: str, vira: str | None, hand: Sequence[str], overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """The answer of ``check-hand`` for one hand (raises ``GameError`` on bad input)."""
    options = resolve_options(preset, overrides)
    decks = max(decks for _, decks in options.decks_by_players)
    if len(hand) != options.hand_size + 1:
        raise GameError(
            "invalid_hand",
            f"expected {options.hand_size + 1} cards (the hand after the draw), got {len(hand)}",
            {"expected": options.hand_size + 1, "got": len(hand)},
        )
    texts = [str(card) for card in hand]
    cards = parse_cards([*texts, vira] if vira else texts, decks)
    wilds: frozenset[int] = frozenset()
    if vira:
        if not options.wild_cards:
            raise GameError("invalid_hand", f"the {preset} preset has no vira or wild cards")
        cards.pop()
        wilds = wild_ids(parse_card(vira), options.wild_scope, decks)
    rules = MeldRules.from_options(options)
    found = find_close(cards, wilds, rules)
    full = found is not None and found.full
    discards: list[str] = []
    for card in sorted(
        closing_discards(cards, wilds, rules), key=lambda card: card % CARDS_PER_DECK
    ):
        if card_str(card) not in discards:
            discards.append(card_str(card))
    melds = [[card_str(card) for card in meld] for meld in found.melds] if found else []
    return {
        "can_close": found is not None,
        "full_close": full,
        "discards": discards,
        "melds": melds,
    }


def _batch_answer(line: str) -> dict[str, Any]:
    try:
        case = json.loads(line)
    except ValueError as error:
        return {"error": f"invalid JSON: {error}"}
    if not isinstance(case, dict):
        return {"error": "each line must be a JSON object"}
    hand = case.get("hand")
    options = case.get("options") or {}
    if not isinstance(hand, list) or not isinstance(options, dict):
        return {"error": "hand must be a list of cards and options an object"}
    try:
        return check_hand_answer(
            str(case.get("preset") or "cacheta-raiz"), case.get("vira"), hand, options
        )
    except GameError as error:
        return {"error": error.message, "code": error.code}


@click.group("rules")
def rules_group() -> None:
    """Rules tools for compliance staff."""


@rules_group.command("check-hand")
@click.option("--preset", default="cacheta-raiz", show_default=True, help="Rule preset.")
@click.option("--vira", default=None, help="The turned card (no wilds without it).")
@click.option(
    "--option", "option_pairs", multiple=True, metavar="NAME=VALUE", help="Override an option."
)
@click.option("--batch", is_flag=True, help="Read JSON lines from stdin, answer one per line.")
@click.argument("cards", nargs=-1)
@click.pass_context
def check_hand(
    ctx: click.Context,
    *,
    preset: str,
    vira: str | None,
    option_pairs: tuple[str, ...],
    batch: bool,
    cards: tuple[str, ...],
) -> None:
    """Can the hand CARDS (after the draw, e.g. 5H AH 2H ... KD) close? Prints one JSON object:
    can_close, full_close, discards (each closing discard once, in card order) and melds."""
    if batch:
        for line in sys.stdin:
            if line.strip():
                click.echo(json.dumps(_batch_answer(line)))
        return
    try:
        answer = check_hand_answer(preset, vira, cards, parse_overrides(option_pairs))
    except GameError as error:
        click.echo(f"error: {error.message}", err=True)
        ctx.exit(EXIT_BAD_INPUT)
    click.echo(json.dumps(answer))


def make_simulate_command(
    chance_factory: ChanceSourceFactory = stand_in_chance_factory,
) -> click.Command:
    """The ``simulate`` command drawing its chance inputs from ``chance_factory``."""

    @click.command("simulate")
    @click.option("--preset", default="cacheta-raiz", show_default=True, help="Rule preset.")
    @click.option("--players", type=int, default=4, show_default=True, help="Seats per match.")
    @click.option("--matches", type=int, default=100, show_default=True, help="Matches to play.")
    @click.option("--seed", type=int, default=1, show_default=True, help="Master seed.")
    @click.option(
        "--option", "option_pairs", multiple=True, metavar="NAME=VALUE", help="Override an option."
    )
    @click.pass_context
    def simulate_command(
        ctx: click.Context,
        *,
        preset: str,
        players: int,
        matches: int,
        seed: int,
        option_pairs: tuple[str, ...],
    ) -> None:
        """Play bot-versus-bot matches; the same seed prints the same figures (but rounds/s)."""
        try:
            options = resolve_options(preset, parse_overrides(option_pairs))
            if matches < 0:
                raise GameError("invalid_option_value", "--matches must not be negative")
            report = simulate(options, players, matches, seed, chance_factory)
        except GameError as error:
            click.echo(f"error: {error.message}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        for line in report.lines():
            click.echo(line)
        click.echo(report.speed_line())

    return simulate_command


simulate_command = make_simulate_command()
"""``raiz simulate`` with the stand-in chance source (until ``rng/`` is wired in)."""
