"""A heuristic bot that sees only a player's view (``views.player_view``) and its seat.

It keeps pairs and near-runs, discards the card with the fewest links to the rest of the
hand, takes the discard top only when it closes or clearly helps, decides mandar/correr from
hand strength and lives (always mandar when nobody else did, forced mandar in marra), and
claims a discard only when it checked with the solver that the card closes its hand. It is
deterministic: ties are broken by a hash of ``tie_break`` and the card.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache, reduce
from operator import or_
from typing import Any

from mypy_extensions import mypyc_attr

from app.games.cards import CARDS_PER_DECK, RANKS_PER_SUIT, identical_ids
from app.games.melds import JOKER, MeldRules, MeldTables
from app.games.solver import can_close, forms_meld_with, has_two_disjoint_melds

__all__ = ("HeuristicBot", "choose_action", "hand_strength")

WILD_KEEP_SCORE = 100
"""A wild card is (almost) never discarded."""
MELD_BONUS = 3
"""Extra score for a card that is part of a complete natural 3-meld in hand."""
TWO_MELDS_STRENGTH = 4
"""Hand strength for holding two disjoint melds."""
MANDAR_THRESHOLD = 7
"""Hand strength from which the bot plays the round."""
CAUTION_LIVES = 3
"""At or below this many lives the bot needs a stronger hand to play."""
CAUTION_EXTRA = 2
"""Extra strength needed when cautious."""
TAKE_MARGIN = 1
"""How much better than the card it replaces the discard top must score to be taken."""
_WORD = 1 << 32
_CARD_BITS = 16
_CARD_MASK = (1 << _CARD_BITS) - 1
_SCORE_SHIFT = 32 + _CARD_BITS
_DEFAULT_RULES = MeldRules()
MAX_PILE_STREAK = 2
"""At most this many draws from the discard pile in a row (unless the card closes)."""


@lru_cache(maxsize=16)
def _rules(shape: str, ace_high: bool, same_suit: bool, per_meld: int, full: bool) -> MeldRules:
    return MeldRules(shape, ace_high, same_suit, per_meld, full)


def _link_weight(first: int, second: int) -> int:
    """How much two faces help each other: same rank (2), adjacent run (2), gapped run (1)."""
    if first == second:
        return 0
    rank_a, rank_b = first % RANKS_PER_SUIT, second % RANKS_PER_SUIT
    if rank_a == rank_b:
        return 2
    if first // RANKS_PER_SUIT != second // RANKS_PER_SUIT:
        return 0
    gap = abs(rank_a - rank_b)
    gap = min(gap, RANKS_PER_SUIT - gap) if 0 in (rank_a, rank_b) else gap  # ace high
    return 2 if gap == 1 else 1 if gap == 2 else 0


_LINKS = tuple(
    tuple(_link_weight(first, second) for second in range(CARDS_PER_DECK))
    for first in range(CARDS_PER_DECK)
)
_NEIGHBOURS = tuple(
    tuple((second, weight) for second, weight in enumerate(row) if weight) for row in _LINKS
)


_NEAR_MASKS = tuple(
    (
        sum(1 << other for other, weight in row if weight == 2),
        sum(1 << other for other, weight in row if weight == 1),
    )
    for row in _NEIGHBOURS
)
"""Per face: bit masks of the faces linked to it with weight 2 and with weight 1."""


_LINKED = tuple(
    (1 << face) | sum(1 << other for other, _ in row) for face, row in enumerate(_NEIGHBOURS)
)
"""Per face: the face itself and every face linked to it."""
_LEVEL_SHIFT = CARDS_PER_DECK


class _ScoreTable:
    """Per meld table: the bot's masks (natural pairs, templates read backwards) and memos."""

    __slots__ = (
        "around",
        "facts",
        "fits_one",
        "fits_pair",
        "fits_two",
        "memo",
        "pair_masks",
        "pair_partners",
        "tables",
    )

    def __init__(self, tables: MeldTables) -> None:
        self.tables = tables
        self.pair_masks = tuple(
            tuple(
                (1 << first) | (1 << second)
                for first, second in pairs
                if first >= 0 and second >= 0
            )
            for pairs in tables.templates
        )
        """Per face: ``1 << a | 1 << b`` of each all-natural template ``(a, b)``."""
        self.around = tuple(
            reduce(or_, masks, linked)
            for linked, masks in zip(_LINKED, self.pair_masks, strict=True)
        )
        """Per face: every face its score depends on (linked, or in one of its templates)."""
        self.memo: dict[int, int] = {}
        """(face, the hand's face counts around it) -> score; at most 52 * 3^8 entries with
        two decks."""
        # the templates read backwards: which faces a natural pair or face completes
        fits_pair: list[dict[int, int]] = [{} for _ in range(CARDS_PER_DECK)]
        fits_one = [0] * CARDS_PER_DECK
        fits_two = 0
        for face, pairs in enumerate(tables.templates):
            for first, second in pairs:
                if first == JOKER:
                    fits_two |= 1 << face
                elif second == JOKER:
                    fits_one[first] |= 1 << face
                else:
                    low, high = sorted((first, second))
                    fits_pair[low][high] = fits_pair[low].get(high, 0) | 1 << face
        self.fits_pair = tuple(fits_pair)
        """Per face a: ``{b: mask}`` for each face b >= a such that the faces in ``mask`` have
        the template ``(a, b)``."""
        self.pair_partners = tuple(sum(1 << other for other in row) for row in fits_pair)
        """Per face a: the faces b of ``fits_pair[a]``, as a bit mask."""
        self.fits_one = tuple(fits_one)
        """Per face a: the faces with the template ``(a, joker)``."""
        self.fits_two = fits_two
        """The faces with the template ``(joker, joker)``."""
        self.facts: dict[tuple[tuple[int, ...], frozenset[int]], _HandFacts] = {}
        """(hand, wild cards) -> what the bot learnt about that hand (a memo, emptied when it
        grows large): a hand is asked about several cards, on several occasions."""

    def score(self, face: int, levels: list[int]) -> int:
        heavy, light = _NEAR_MASKS[face]
        score = 0
        for level in levels:
            score += 2 * (level & heavy).bit_count() + (level & light).bit_count()
        present = levels[0]
        for mask in self.pair_masks[face]:
            if present & mask == mask:
                return score + MELD_BONUS
        return score


_SCORE_TABLES: dict[int, _ScoreTable] = {}


def _score_table(tables: MeldTables) -> _ScoreTable:
    """The score table of ``tables`` (keyed by identity: hashing the templates costs more)."""
    known = _SCORE_TABLES.get(id(tables))
    if known is None or known.tables is not tables:
        known = _SCORE_TABLES[id(tables)] = _ScoreTable(tables)
    return known


def _card_scores(hand: list[int], wilds: frozenset[int], rules: MeldRules) -> dict[int, int]:
    """Each card's score: the weighted links to the other cards' faces, plus a bonus when it
    is part of a complete natural 3-meld in hand; wild cards score ``WILD_KEEP_SCORE``."""
    return dict(zip(hand, _hand_scores(hand, wilds, rules), strict=True))


def _hand_scores(hand: list[int], wilds: frozenset[int], rules: MeldRules) -> list[int]:
    """``_card_scores`` as a list, in the order of ``hand``."""
    # Face counts as bit masks by level (levels[k]: faces held more than k times): the
    # weighted sum over linked faces is a few popcounts. A score depends only on the face
    # and the counts of the faces around it, so scores are memoised on exactly that: the
    # key is the face, then per level the level's faces around it, 52 bits each.
    table = _score_table(rules.tables)
    around = table.around
    faces = [card % CARDS_PER_DECK for card in hand]
    present = 0
    repeated = 0  # faces held more than once
    for face in faces:
        bit = 1 << face
        repeated |= present & bit
        present |= bit
    # the keys in one comprehension for the usual levels (no face held three times)
    if not repeated:
        levels = [present]
        keys = [face | (present & around[face]) << _LEVEL_SHIFT for face in faces]
    elif len(faces) - len(set(faces)) == repeated.bit_count():
        levels = [present, repeated]
        keys = [
            face
            | (present & around[face]) << _LEVEL_SHIFT
            | (repeated & around[face]) << 2 * _LEVEL_SHIFT
            for face in faces
        ]
    else:
        levels = _levels(hand)
        keys = []
        for face in faces:
            near = around[face]
            key = face
            shift = _LEVEL_SHIFT
            for level in levels:
                key |= (level & near) << shift
                shift += _LEVEL_SHIFT
            keys.append(key)
    memo = table.memo
    scores: list[int | None] = list(map(memo.get, keys))
    if not wilds.isdisjoint(hand):
        for index, card in enumerate(hand):
            if card in wilds:
                scores[index] = WILD_KEEP_SCORE
    if None in scores:
        for index, score in enumerate(scores):
            if score is None:
                scores[index] = memo[keys[index]] = table.score(faces[index], levels)
    return scores  # type: ignore[return-value]  # (no None is left)


def _levels(hand: list[int]) -> list[int]:
    """Face counts as bit masks by level: ``levels[k]`` holds the faces held more than k times."""
    levels: list[int] = []
    for card in hand:
        bit = 1 << (card % CARDS_PER_DECK)
        for index, level in enumerate(levels):
            if not level & bit:
                levels[index] = level | bit
                break
        else:
            levels.append(bit)
    return levels


def _holds_two_melds(hand: Sequence[int], wilds: frozenset[int], rules: MeldRules) -> bool:
    """``has_two_disjoint_melds``, memoised with the hand's other facts."""
    return _hand_facts(hand, wilds, rules).holds_two_melds(hand, wilds, rules)


def _closes_after_draw(
    hand: list[int],
    drawn: int | None,
    wilds: frozenset[int],
    rules: MeldRules,
    locked: frozenset[int],
    *,
    no_cover_before: bool = False,
    facts_of: Callable[[list[int], frozenset[int], MeldRules], _HandFacts] | None = None,
) -> bool:
    """``find_close(hand, wilds, rules, locked) is not None`` after drawing ``drawn``, with
    cheap tests first for three melds of three.

    Unless the drawn card makes a meld with two cards of the hand before the draw, it can only
    be the discard, so the search for a close discarding it is enough -- and needless when
    ``no_cover_before`` says that the hand before the draw is known not to be three melds.
    Otherwise a close keeps two melds that hold neither the drawn card nor the discard, so the
    hand before the draw already held two disjoint melds (a cached test: the claim windows
    ask it of that hand). ``facts_of`` looks up the facts of that hand (``_hand_facts`` by
    default).
    """
    if rules.meld_shape != "three_threes" or drawn is None or drawn not in hand:
        return can_close(hand, wilds, rules, locked)
    before = list(hand)
    before.remove(drawn)
    facts = (facts_of or _hand_facts)(before, wilds, rules)
    if facts.fits(drawn, wilds):
        return facts.holds_two_melds(before, wilds, rules) and can_close(hand, wilds, rules, locked)
    return not no_cover_before and can_close(hand, wilds, rules, locked, discard=drawn)


def _fits_a_meld(card: int, hand: list[int], wilds: frozenset[int], rules: MeldRules) -> bool:
    """A cheap necessary condition for ``card`` to make a 3-card meld with two cards of
    ``hand``: some template of its face has its natural faces in the hand and no more jokers
    than the hand's wild cards. Always ``True`` for a wild ``card`` (it may be the joker).
    """
    return card in wilds or _hand_facts(hand, wilds, rules).fits(card, wilds)


class _HandFacts:
    """What the bot computed about one hand (with given wild cards)."""

    __slots__ = ("fit_mask", "two_melds")

    def __init__(self, fit_mask: int) -> None:
        self.fit_mask = fit_mask
        """The faces that have a template whose natural faces are in the hand and which needs
        no more jokers than the hand's wild cards (``_fits_a_meld``)."""
        self.two_melds: bool | None = None
        """``has_two_disjoint_melds`` of the hand, once asked."""

    def fits(self, card: int, wilds: frozenset[int]) -> bool:
        """``_fits_a_meld(card, hand, wilds, rules)`` for a ``card`` not in the hand: with
        ``wilds`` less that card, too (the hand's wild cards are the same)."""
        return card in wilds or bool(self.fit_mask >> (card % CARDS_PER_DECK) & 1)

    def holds_two_melds(self, hand: Sequence[int], wilds: frozenset[int], rules: MeldRules) -> bool:
        """``has_two_disjoint_melds(hand, wilds, rules)`` of the hand these are the facts of,
        computed once."""
        if self.two_melds is None:
            self.two_melds = has_two_disjoint_melds(hand, wilds, rules)
        return self.two_melds


_FACTS_LIMIT = 4096


def _hand_facts(hand: Sequence[int], wilds: frozenset[int], rules: MeldRules) -> _HandFacts:
    """The memoised facts of ``hand`` (computing its fit mask the first time)."""
    table = _score_table(rules.tables)
    key = (tuple(hand), wilds)
    facts = table.facts.get(key)
    if facts is not None:
        return facts
    present = 0
    jokers = 0
    for card in hand:
        present |= 1 << (card % CARDS_PER_DECK)
        if card in wilds:
            jokers += 1
    faces = {card % CARDS_PER_DECK for card in hand}
    fits_pair = table.fits_pair
    pair_partners = table.pair_partners
    mask = 0
    for face in faces:
        partners = present & pair_partners[face]
        while partners:  # each partner in the hand, lowest bit first
            bit = partners & -partners
            mask |= fits_pair[face][bit.bit_length() - 1]
            partners ^= bit
    if jokers:
        fits_one = table.fits_one
        for face in faces:
            mask |= fits_one[face]
        if jokers >= 2:
            mask |= table.fits_two
    if len(table.facts) >= _FACTS_LIMIT:
        table.facts.clear()
    facts = table.facts[key] = _HandFacts(mask)
    return facts


def hand_strength(hand: list[int], wilds: frozenset[int], rules: MeldRules) -> int:
    """A rough strength: wilds, links between cards, and two complete melds."""
    two = TWO_MELDS_STRENGTH if _holds_two_melds(hand, wilds, rules) else 0
    return _strength_without_melds(hand, wilds, rules) + two


def _strength_without_melds(hand: list[int], wilds: frozenset[int], rules: MeldRules) -> int:
    """``hand_strength`` but the two melds: the wilds and the links between cards."""
    scores = _hand_scores(hand, wilds, rules)
    wild_count = 0
    links = 0
    for card, score in zip(hand, scores, strict=True):
        if card in wilds:
            wild_count += 1
        else:
            links += min(score, 6)
    return 3 * wild_count + links // 2


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled (app/native.py), still subclassable
class HeuristicBot:
    """Deterministic heuristic player for one seat."""

    __slots__ = (
        "_facts",
        "_kept",
        "_last_answer",
        "_last_question",
        "_last_rules",
        "_options",
        "_orders",
        "_rules",
        "_shown_wilds",
        "_wilds",
        "pile_streak",
        "seat",
        "tie_break",
    )

    def __init__(self, seat: int, tie_break: int = 0) -> None:
        self.seat = seat
        """The seat this bot plays."""
        self.tie_break = tie_break
        """Seed of the hash that orders equally good discards."""
        self.pile_streak = 0
        """Draws from the discard pile in a row (the bot's only memory of the game)."""
        self._options: Mapping[str, Any] | None = None
        self._rules = _DEFAULT_RULES
        """The meld rules of the options last seen (``_options``)."""
        self._shown_wilds: list[int] | None = None
        self._wilds: frozenset[int] = frozenset()
        """The view's wild cards last seen (``_shown_wilds``), as a set."""
        self._orders: tuple[tuple[int, ...], int] = ((), tie_break)
        """``_order_table`` (the discard tie-break of each card id, with the id) and the
        ``tie_break`` it was made with."""
        self._kept: tuple[frozenset[int], frozenset[int], MeldRules] | None = None
        """The hand left by the bot's last discard, its wild cards and the meld rules:
        not three melds (or the hand it was in would have closed with that discard)."""
        self._facts: tuple[list[int], frozenset[int], MeldTables, _HandFacts] | None = None
        """The hand last asked about (a copy), its wild cards, the meld tables (the facts
        depend on the rules through them only) and its facts (:meth:`_facts_of`)."""
        self._last_question: tuple[Any, ...] = ()
        self._last_rules: MeldRules | None = None
        self._last_answer = False
        """The last :meth:`_closes_with` question, its meld rules and its answer."""

    def may_claim(
        self,
        hand: list[int],
        wilds: frozenset[int],
        rules: MeldRules,
        card: int | None = None,
        wild_discard_is_plain: bool = False,
    ) -> bool:
        """A cheap necessary condition for :meth:`act` to claim in an open claim window.

        ``hand`` and ``wilds`` are what the view would show (the hand, and the wild cards less
        the plain wilds in it), ``card`` the discard (the top of the pile) and
        ``wild_discard_is_plain`` the option of that name; ``False`` means ``act`` would return
        ``None`` (no two melds in hand, or no meld the card could sit in), so the driver need
        not build the view to ask.
        """
        facts = self._facts_of(hand, wilds, rules)
        if card is not None and rules.meld_shape == "three_threes":
            # the cheaper test first (the card is not in the hand: the jokers are the same)
            mine = wilds - {card} if wild_discard_is_plain else wilds
            if not facts.fits(card, mine):
                return False
        return facts.holds_two_melds(hand, wilds, rules)

    def _facts_of(self, hand: list[int], wilds: frozenset[int], rules: MeldRules) -> _HandFacts:
        """``_hand_facts(hand, wilds, rules)``, the last hand asked about kept in front of the
        memo: between its turns a bot is asked about the same hand in every claim window,
        then before its draw and after it (the hand before the draw)."""
        last = self._facts
        # (the driver's rules and the bot's are equal objects, not one: their tables are one)
        if last is not None and last[2] is rules.tables and last[0] == hand and last[1] == wilds:
            return last[3]
        facts = _hand_facts(hand, wilds, rules)
        self._facts = (list(hand), wilds, rules.tables, facts)  # a copy: the engine's changes
        return facts

    def act(self, view: Mapping[str, Any]) -> dict[str, Any] | None:
        """The action to send now (as a dict), or ``None`` when there is nothing to do."""
        current = view["round"]
        if current is None or view["over"] or view["waiting_for_chance"]:
            return None
        options = view["options"]
        if options is not self._options:  # the same options object: the same rules
            self._options = options
            self._rules = _rules(
                options["meld_shape"],
                options["ace_high"],
                options["set_same_suit_allowed"],
                options["wilds_per_meld"],
                options["full_close_allowed"] and options["meld_shape"] != "three_threes",
            )
        rules = self._rules
        seat = self.seat
        phase = current["phase"]
        hand: list[int] = current["hand"]
        shown = current["wilds"]
        if shown != self._shown_wilds:  # the same wild cards all round
            self._shown_wilds = shown
            self._wilds = frozenset(shown)
        plain = current["plain_wilds"]
        wilds = self._wilds.difference(plain) if plain else self._wilds
        if phase == "deciding":
            if seat == current["dealer"] or current["my_decision"] is not None or not hand:
                return None
            return self._decide(view, hand, wilds, rules, others_mandar=None)
        if phase == "dealer_deciding":
            if seat != current["dealer"]:
                return None
            return self._decide(view, hand, wilds, rules, current["mandar_count"])
        if phase == "claim_window":
            return self._claim(view, hand, wilds, rules)
        if current["turn"] != seat:
            return None
        if phase == "draw":
            return self._draw(view, hand, wilds, rules)
        if phase == "discard":
            return self._discard(current, hand, wilds, rules)
        return None

    def _decide(
        self,
        view: Mapping[str, Any],
        hand: list[int],
        wilds: frozenset[int],
        rules: MeldRules,
        others_mandar: int | None,
    ) -> dict[str, Any]:
        lives = view["lives"][self.seat]
        if lives == 1 or others_mandar == 0:
            mandar = True  # marra, or the dealer alone would win the round outright
        else:
            need = MANDAR_THRESHOLD + (CAUTION_EXTRA if lives <= CAUTION_LIVES else 0)
            # hand_strength(hand, wilds, rules) >= need, searching for the two melds only when
            # they decide
            strength = _strength_without_melds(hand, wilds, rules)
            mandar = strength >= need or (
                strength + TWO_MELDS_STRENGTH >= need
                and self._facts_of(hand, wilds, rules).holds_two_melds(hand, wilds, rules)
            )
        return {"type": "decide", "seat": self.seat, "mandar": mandar}

    def _draw(
        self, view: Mapping[str, Any], hand: list[int], wilds: frozenset[int], rules: MeldRules
    ) -> dict[str, Any]:
        take = self._wants_top(view, hand, wilds, rules)
        self.pile_streak = self.pile_streak + 1 if take else 0
        return {"type": "draw_discard" if take else "draw_stock", "seat": self.seat}

    def _wants_top(
        self, view: Mapping[str, Any], hand: list[int], wilds: frozenset[int], rules: MeldRules
    ) -> bool:
        current = view["round"]
        pile = current["pile"]
        if not pile or self.seat in current["burned"]:
            return False
        top = pile[-1]
        options = view["options"]
        mine = wilds - {top} if options["wild_from_discard_is_plain"] else wilds
        if options["restricted_discard_draw"] and not forms_meld_with(top, hand, mine, rules):
            return False
        # three melds of three: the top cannot be the discard, so a close with it keeps two
        # melds made of hand cards only (a cheap, cached test first)
        three = rules.meld_shape == "three_threes"
        if not three:
            fits_two = True
        else:  # the top is not in the hand: the hand's facts with ``wilds`` hold for ``mine``
            facts = self._facts_of(hand, wilds, rules)
            fits_two = facts.fits(top, mine) and facts.holds_two_melds(hand, wilds, rules)
        if fits_two and self._closes_with(
            hand, top, mine, rules, self._locks(view, top), allow_full=True
        ):
            return True
        if self.pile_streak >= MAX_PILE_STREAK:
            return False  # two bots trading the same cards forever would never end the round
        if top in mine:
            return True
        # take it only to complete a natural meld, and only if it beats the card it replaces
        present = 0
        for card in hand:
            if card not in mine:
                present |= 1 << (card % CARDS_PER_DECK)
        pairs = _score_table(rules.tables).pair_masks[top % CARDS_PER_DECK]
        if not any(present & pair == pair for pair in pairs):
            return False
        scores = _card_scores([*hand, top], mine, rules)
        worst = min(score for card, score in scores.items() if card != top)
        return scores[top] > worst + TAKE_MARGIN

    def _discard(
        self, current: Mapping[str, Any], hand: list[int], wilds: frozenset[int], rules: MeldRules
    ) -> dict[str, Any]:
        locked = frozenset(current["locked"])
        drawn = current["drawn"]
        kept = self._kept
        cards = frozenset(hand)
        no_cover_before = (
            kept is not None
            and kept[2] is rules
            and kept[1] == wilds
            and drawn in cards
            and kept[0] == cards - {drawn}
        )
        if _closes_after_draw(
            hand,
            drawn,
            wilds,
            rules,
            locked,
            no_cover_before=no_cover_before,
            facts_of=self._facts_of,
        ):
            return {"type": "close", "seat": self.seat, "partition": None, "discard": None}
        scores = _hand_scores(hand, wilds, rules)
        orders, tie_break = self._orders
        if len(orders) <= max(hand) or tie_break != self.tie_break:
            orders = _order_table(self.tie_break, max(hand) // CARDS_PER_DECK + 1)
            self._orders = (orders, self.tie_break)
        # the least (score, order) as one int: orders differ between cards (an odd multiplier
        # mod 2^32), so the card in the low bits never decides
        weakest = min(
            [
                score << _SCORE_SHIFT | orders[card]
                for card, score in zip(hand, scores, strict=True)
                if card not in locked
            ]
        )
        card = weakest & _CARD_MASK
        # that hand did not close, and the card is not locked: what is left is not three melds
        self._kept = (cards - {card}, wilds, rules)
        return {"type": "discard", "seat": self.seat, "card": card}

    def _claim(
        self, view: Mapping[str, Any], hand: list[int], wilds: frozenset[int], rules: MeldRules
    ) -> dict[str, Any] | None:
        current = view["round"]
        window = current["claim_window"]
        if (
            window is None
            or self.seat not in (current["players"] or ())
            or self.seat == window["discarder"]
            or self.seat in current["burned"]
            or current["claimed"]
        ):
            return None
        card = window["card"]
        mine = wilds - {card} if view["options"]["wild_from_discard_is_plain"] else wilds
        # never claim blindly: only when the claimed card closes the hand (with three melds
        # of three the locked card must sit in one of them: a cheap test first)
        # (the card is not in the hand: the hand's facts with ``wilds`` hold for ``mine``)
        facts = self._facts_of(hand, wilds, rules)
        if rules.meld_shape == "three_threes" and not facts.fits(card, mine):
            return None
        # a claim needs two melds in hand; the hand only changes on the bot's own turns
        if not facts.holds_two_melds(hand, wilds, rules):
            return None
        if self._closes_with(hand, card, mine, rules, self._locks(view, card), allow_full=False):
            return {"type": "claim", "seat": self.seat}
        return None

    def _closes_with(
        self,
        hand: list[int],
        card: int,
        wilds: frozenset[int],
        rules: MeldRules,
        locks: frozenset[int],
        *,
        allow_full: bool,
    ) -> bool:
        """Whether ``hand`` plus the discard ``card`` (locked with ``locks``) closes.

        The answer to the last question is kept: the next player is asked about the same hand
        and card twice, in the claim window and then before drawing.
        """
        question = (hand, card, wilds, locks, allow_full and rules.full_close_allowed)
        if rules is self._last_rules and question == self._last_question:
            return self._last_answer
        answer = can_close([*hand, card], wilds, rules, locks, allow_full=allow_full)
        self._last_question = (list(hand), *question[1:])
        self._last_rules = rules
        self._last_answer = answer
        return answer

    @staticmethod
    def _locks(view: Mapping[str, Any], card: int) -> frozenset[int]:
        if view["options"]["discard_lock_identical"]:
            return frozenset((card, *identical_ids(card, view["decks"])))
        return frozenset((card,))


@lru_cache(maxsize=64)
def _order_table(tie_break: int, decks: int) -> tuple[int, ...]:
    """Per card id of a shoe of ``decks`` packs: its discard tie-break order (a hash of
    ``tie_break`` and the card) ``<< _CARD_BITS | card``.

    Made for whole packs, so a bot makes it once per shoe rather than whenever a higher card
    id reaches its hand, and shared (a bounded cache) by the bots of one ``tie_break`` -- the
    bots of a simulated match all have the match's.
    """
    return tuple(
        ((card * 2654435761 + tie_break * 40503) % _WORD) << _CARD_BITS | card
        for card in range(decks * CARDS_PER_DECK)
    )


def choose_action(view: Mapping[str, Any], seat: int, tie_break: int = 0) -> dict[str, Any] | None:
    """What the heuristic bot of ``seat`` does given its player ``view`` (``None``: wait)."""
    return HeuristicBot(seat, tie_break).act(view)
