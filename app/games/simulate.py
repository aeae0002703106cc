"""Bot-versus-bot matches: the driver, chance sources, and the ``raiz simulate`` report.

Chance comes from a :class:`ChanceSource` (per match); :func:`stream_chance_factory` adapts
any ``derive_stream(seed: bytes, label: str)`` with ``randbelow``/``permutation`` -- the
contract of ``rng.streams.derive_stream`` -- using a per-round seed derived from the master
seed (:func:`round_seed`). Until ``rng/`` is wired in, :func:`sha256_stand_in_stream` (a
SHA-256 counter stream with rejection sampling, unbiased but NOT the audited RNG) stands in.
"""

from __future__ import annotations

import hashlib
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.games.bots import HeuristicBot
from app.games.cacheta import PLAYER_ACTIONS, CachetaMatch, new_match
from app.games.errors import GameError
from app.games.events import ClaimResolved, Closed, Event, RoundEnded, TurnStarted
from app.games.options import RummyOptions
from app.games.views import bot_view

__all__ = (
    "ChanceSource",
    "ChanceSourceFactory",
    "RandomStream",
    "SimulationReport",
    "StreamChanceSource",
    "bot_step",
    "play_match",
    "round_seed",
    "sha256_stand_in_stream",
    "simulate",
    "stand_in_chance_factory",
    "stream_chance_factory",
)

MAX_INPUTS_PER_MATCH = 1_000_000
"""Safety stop for a runaway simulation."""


class ChanceSource(Protocol):
    """Supplies a match's chance inputs; ``(round_number, label)`` names the stream."""

    def randbelow(self, round_number: int, label: str, n: int) -> int:
        """An int uniformly in ``[0, n)``."""
        ...

    def permutation(self, round_number: int, label: str, n: int) -> list[int]:
        """A uniformly random permutation of ``range(n)``."""
        ...


ChanceSourceFactory = Callable[[int, int], ChanceSource]
"""``factory(master_seed, match_index)`` -> the chance source of one match."""


class RandomStream(Protocol):
    """What ``rng.streams.derive_stream`` returns."""

    def randbelow(self, n: int) -> int:
        """An int uniformly in ``[0, n)``."""
        ...

    def permutation(self, n: int) -> list[int]:
        """A uniformly random permutation of ``range(n)``."""
        ...


StreamDeriver = Callable[[bytes, str], RandomStream]
"""``derive_stream(seed, label)``."""


def round_seed(master_seed: int, match_index: int, round_number: int) -> bytes:
    """The seed of one simulated round: SHA-256(tag ‖ master seed ‖ match ‖ round)."""
    payload = b"raiz-simulate/1|%d|%d|%d" % (master_seed, match_index, round_number)
    return hashlib.sha256(payload).digest()


class StreamChanceSource:
    """Chance source over a ``derive_stream`` function, one stream per (round, label)."""

    __slots__ = ("derive", "master_seed", "match_index")

    def __init__(self, derive: StreamDeriver, master_seed: int, match_index: int) -> None:
        self.derive = derive
        self.master_seed = master_seed
        self.match_index = match_index

    def _stream(self, round_number: int, label: str) -> RandomStream:
        return self.derive(round_seed(self.master_seed, self.match_index, round_number), label)

    def randbelow(self, round_number: int, label: str, n: int) -> int:
        """Draw from the (round, label) stream."""
        return self._stream(round_number, label).randbelow(n)

    def permutation(self, round_number: int, label: str, n: int) -> list[int]:
        """Permute with the (round, label) stream."""
        return self._stream(round_number, label).permutation(n)


def stream_chance_factory(derive: StreamDeriver) -> ChanceSourceFactory:
    """A factory for ``simulate`` from ``derive_stream`` (e.g. ``rng.streams.derive_stream``)."""

    def factory(master_seed: int, match_index: int) -> ChanceSource:
        return StreamChanceSource(derive, master_seed, match_index)

    return factory


class _Sha256Stream:
    """SHA-256 in counter mode; ``randbelow`` by rejection sampling, Fisher-Yates on top.

    The stream is read 8 bytes (one big-endian 64-bit word) at a time: block ``k`` is
    ``SHA-256(key || k as 8 bytes)``, split into four words.
    """

    __slots__ = ("counter", "key", "words")

    def __init__(self, seed: bytes, label: str) -> None:
        self.key = hashlib.sha256(b"raiz-stand-in/1|" + seed + b"|" + label.encode()).digest()
        self.counter = 0
        self.words: list[int] = []
        """The unread words of the current block, the next one LAST."""

    def _word(self) -> int:
        words = self.words
        if not words:
            block = hashlib.sha256(self.key + self.counter.to_bytes(8, "big")).digest()
            self.counter += 1
            words.extend(reversed(_FOUR_WORDS.unpack(block)))
        return words.pop()

    def randbelow(self, n: int) -> int:
        if n <= 0:
            raise ValueError("n must be positive")
        limit = _SPAN - _SPAN % n
        while True:
            value = self._word()
            if value < limit:
                return value % n

    def permutation(self, n: int) -> list[int]:
        # Fisher-Yates with ``randbelow(index + 1)`` inlined (the same words, the same result)
        items = list(range(n))
        words = self.words
        for index in range(n - 1, 0, -1):
            bound = index + 1
            limit = _SPAN - _SPAN % bound
            while True:
                value = words.pop() if words else self._word()
                if value < limit:
                    break
            other = value % bound
            items[index], items[other] = items[other], items[index]
        return items


_FOUR_WORDS = struct.Struct(">4Q")
_SPAN = 1 << 64


def sha256_stand_in_stream(seed: bytes, label: str) -> RandomStream:
    """Deterministic stand-in for ``rng.streams.derive_stream`` (simulations only)."""
    return _Sha256Stream(seed, label)


stand_in_chance_factory: ChanceSourceFactory = stream_chance_factory(sha256_stand_in_stream)
"""The chance factory ``raiz simulate`` uses until ``rng/`` is wired in."""


def play_match(
    options: RummyOptions,
    seats: int,
    chance: ChanceSource,
    bots: Sequence[HeuristicBot] | None = None,
    observe: Callable[[CachetaMatch, tuple[Event, ...]], None] | None = None,
) -> CachetaMatch:
    """Play one full match with bots (a bot that does nothing lets its timer run out).

    ``observe(match, events)`` is called after every input (tests check invariants there).
    """
    match = new_match(options, seats)
    players = list(bots) if bots is not None else [HeuristicBot(seat) for seat in range(seats)]
    for _ in range(MAX_INPUTS_PER_MATCH):
        if match.over:
            return match
        events = bot_step(match, chance, players)
        if observe is not None:
            observe(match, events)
    raise RuntimeError("simulation did not finish")


def bot_step(
    match: CachetaMatch, chance: ChanceSource, bots: Sequence[HeuristicBot]
) -> tuple[Event, ...]:
    """One step of a bot match: a chance input, a bot's action, or the timer running out
    (claim windows: every bot that may claim is asked, then the window closes)."""
    request = match.pending_chance()
    if request is not None:
        if request.kind == "first_dealer":
            return match.apply_chance(
                chance.randbelow(request.round_number, request.label, request.size)
            )
        return match.apply_chance(
            chance.permutation(request.round_number, request.label, request.size)
        )
    current = match.round
    assert current is not None
    if current.phase == "deciding":
        waiting = [
            seat
            for seat in current.seats
            if seat != current.dealer and seat not in current.decisions
        ]
        ask = waiting
    elif current.phase == "dealer_deciding":
        ask = [current.dealer]
    elif current.phase == "claim_window":
        events: tuple[Event, ...] = ()
        card = current.pile[-1]
        plain_discard = match.options.wild_from_discard_is_plain
        for seat in current.players:
            if seat == current.turn or seat in current.burned:
                continue  # the discarder and burned players cannot claim: no need to ask
            hand = current.hands[seat]
            plain = current.plain.get(seat)
            wilds = current.wilds.difference(plain.intersection(hand)) if plain else current.wilds
            if not bots[seat].may_claim(hand, wilds, match.rules, card, plain_discard):
                continue  # the bot would not claim (no two melds, or no meld for the card)
            action = bots[seat].act(bot_view(match, seat))
            if action is not None:
                events += _send(match, action)
        return events + match.claim_window_closed()
    else:
        assert current.turn is not None
        ask = [current.turn]
    for seat in ask:
        action = bots[seat].act(bot_view(match, seat))
        if action is not None:
            return _send(match, action)
    deadline = match.current_deadline()
    assert deadline is not None
    return match.timeout(deadline.token)


_PLAYER_ACTION_TYPES = frozenset(action.type for action in PLAYER_ACTIONS)


def _send(match: CachetaMatch, action: Mapping[str, Any]) -> tuple[Event, ...]:
    """``match.apply(action)`` for a bot's action, without first parsing the dict into an input
    record: the match method its ``type`` names is called with its fields, as ``apply`` would
    (the method verifies them and records the same input)."""
    kind = action["type"]
    if kind not in _PLAYER_ACTION_TYPES:
        raise GameError("unknown_action", f"a bot sent the action {kind!r}", {"type": kind})
    method: Callable[..., tuple[Event, ...]] = getattr(match, kind)
    fields = dict(action)
    del fields["type"]
    return method(**fields)


@dataclass(slots=True)
class SimulationReport:
    """Totals over simulated matches (integers only, so the report is reproducible)."""

    matches: int = 0
    rounds: int = 0
    closes: int = 0
    out_of_turn_closes: int = 0
    burns: int = 0
    all_ran: int = 0
    one_left: int = 0
    drawn: int = 0
    turns: int = 0
    played_rounds: int = 0
    wins: list[int] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, match: CachetaMatch) -> None:
        """Count one finished match."""
        self.matches += 1
        for event in match.events:
            if isinstance(event, RoundEnded):
                self.rounds += 1
                self.all_ran += event.result == "all_ran"
                self.one_left += event.result == "one_left"
                self.drawn += event.result == "drawn"
                self.played_rounds += event.result in ("closed", "drawn")
            elif isinstance(event, Closed):
                self.closes += 1
                self.out_of_turn_closes += event.out_of_turn
            elif isinstance(event, ClaimResolved):
                self.burns += event.outcome == "burned"
            elif isinstance(event, TurnStarted):
                self.turns += 1
        assert match.winner is not None
        while len(self.wins) < match.seats:
            self.wins.append(0)
        self.wins[match.winner] += 1

    def lines(self) -> list[str]:
        """The reproducible part of the report (everything but the speed)."""
        return [
            f"matches: {self.matches}",
            f"rounds: {self.rounds}",
            f"closes: {self.closes}",
            f"out-of-turn closes: {self.out_of_turn_closes}",
            f"burns: {self.burns}",
            f"all-ran annulments: {self.all_ran}",
            f"one-player-left wins: {self.one_left}",
            f"drawn rounds: {self.drawn}",
            f"average turns per round: {_ratio(self.turns, self.rounds)}",
            f"average turns per played round: {_ratio(self.turns, self.played_rounds)}",
            f"wins by seat: {' '.join(str(count) for count in self.wins)}",
        ]

    def speed_line(self) -> str:
        """Rounds per second (varies run to run; printed on its own line)."""
        rate = self.rounds / self.seconds if self.seconds > 0 else 0.0
        return f"rounds/s: {rate:.0f}"


def _ratio(numerator: int, denominator: int) -> str:
    """``numerator / denominator`` with two decimals, in integers (reproducible)."""
    hundredths = (numerator * 100 + denominator // 2) // denominator if denominator else 0
    return f"{hundredths // 100}.{hundredths % 100:02d}"


def simulate(
    options: RummyOptions,
    players: int,
    matches: int,
    seed: int,
    chance_factory: ChanceSourceFactory = stand_in_chance_factory,
) -> SimulationReport:
    """Play ``matches`` bot matches; the same ``seed`` gives the same report (but speed)."""
    report = SimulationReport()
    started = time.perf_counter()
    for index in range(matches):
        bots = [HeuristicBot(seat, tie_break=index) for seat in range(players)]
        report.add(play_match(options, players, chance_factory(seed, index), bots))
    report.seconds = time.perf_counter() - started
    return report
