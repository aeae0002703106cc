"""Dispute bundles of bot matches made without a database (unit tests and the benchmark).

:class:`SyntheticTable` records a match the way :class:`app.tables.driver.TableDriver` does:
round 1 starts from a new match and logs its opening events; each chance input is drawn
from the round's seed through ``rng`` and logged, then its events; each input is logged
with its ``source`` (a player, or a timer), then its events; the batch that ends a round is
followed by its result (final state hash after the batch), the reveal and the signature; the
next round starts from the state at that point.  Ledger records of a paid table and its
settlement are made up to match the ledger's formulas.  Seeds are derived from a master
seed, so the same arguments give the same bundle.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

from app.compliance.bundle import BUNDLE_FORMAT
from app.compliance.record import account_id, record_hash, split_pool
from app.compliance.signing import SIGNATURE_ALGORITHM, Signer, round_message
from app.compliance.verify import signed_record
from app.games import HeuristicBot, new_match, player_view
from app.games.events import Event, MatchEnded, RoundEnded
from app.games.options import RummyOptions
from app.tables.roundlog import entry_hash, genesis_hash
from rng.streams import ALGORITHM_VERSION, commitment, derive_stream

__all__ = ("SyntheticTable", "synthetic_bundle")

_BASE_TIME = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
_PERMUTATION_KINDS = frozenset({"deal", "reshuffle"})
MAX_INPUTS = 20_000


class SyntheticTable:
    """One table's match played by bots and recorded like the driver records it."""

    def __init__(
        self,
        options: RummyOptions,
        seats: int,
        *,
        signer: Signer,
        master_seed: bytes = b"synthetic",
        index: int = 0,
        entry_cents: int = 500,
        fee_bps: int = 1_000,
    ) -> None:
        self.options = options
        self.signer = signer
        self.master = master_seed
        self.table_id = str(
            uuid.uuid5(uuid.NAMESPACE_URL, f"raiz-synthetic/{master_seed.hex()}/{index}")
        )
        self.users = [
            str(uuid.uuid5(uuid.UUID(self.table_id), f"user/{seat}")) for seat in range(seats)
        ]
        self.entry_cents = entry_cents
        self.fee_bps = fee_bps
        self.match = new_match(options, seats)
        self.bots = [HeuristicBot(seat, tie_break=index) for seat in range(seats)]
        self.rounds: list[dict[str, Any]] = []
        self._clock = 0
        self._seed = b""
        self._last = b""
        self.result: dict[str, Any] | None = None
        self.settlement: dict[str, Any] | None = None

    # --- recording, as the driver does ----------------------------------------------------------
    def _now(self) -> str:
        self._clock += 1
        return (_BASE_TIME + dt.timedelta(milliseconds=self._clock)).isoformat()

    def _log(self, kind: str, body: dict[str, Any]) -> None:
        round_ = self.rounds[-1]
        seq = len(round_["log"]) + 1
        self._last = entry_hash(self._last, seq, kind, body)
        round_["log"].append({"seq": seq, "kind": kind, "body": body, "hash": self._last.hex()})

    def _begin_round(self, number: int, initial: Sequence[Event] = ()) -> None:
        round_id = str(uuid.uuid5(uuid.UUID(self.table_id), f"round/{number}"))
        self._seed = hashlib.sha256(
            self.master + self.table_id.encode() + bytes([number % 256])
        ).digest()
        committed = commitment(self._seed)
        self.rounds.append(
            {
                "id": round_id,
                "number": number,
                "rng_round_id": str(uuid.uuid5(uuid.UUID(round_id), "rng")),
                "commitment": committed,
                "rng_version": ALGORITHM_VERSION,
                "start_state": self.match.snapshot(),
                "start_state_hash": self.match.state_hash(),
                "created_at": self._now(),
                "log": [],
                "result": None,
                "rng": {
                    "version": ALGORITHM_VERSION,
                    "commitment": committed,
                    "seed": None,
                    "client_seeds": [],
                    "contributors": [],
                    "streams": [],
                },
                "signature": None,
                "inclusion": None,
            }
        )
        self._last = genesis_hash(uuid.UUID(round_id), committed)
        for event in initial:
            self._log("event", event.to_dict())

    def _resolve_chance(self) -> None:
        while (request := self.match.pending_chance()) is not None:
            if not self.rounds or request.round_number != self.rounds[-1]["number"]:
                self._begin_round(request.round_number)
                continue
            stream = derive_stream(self._seed, request.label)
            value: Any = (
                stream.permutation(request.size)
                if request.kind in _PERMUTATION_KINDS
                else stream.randbelow(request.size)
            )
            self.rounds[-1]["rng"]["streams"].append({"label": request.label, "fixed": False})
            events = self.match.apply_chance(value)
            self._log(
                "chance",
                {
                    "type": "chance",
                    "kind": request.kind,
                    "round": request.round_number,
                    "label": request.label,
                    "value": value,
                },
            )
            self._after(events)

    def _input(self, record: dict[str, Any], source: dict[str, Any]) -> None:
        events = self.match.apply(record)
        self._log("input", {**record, "source": source})
        self._after(events)
        self._resolve_chance()

    def _after(self, events: Sequence[Event]) -> None:
        for event in events:
            self._log("event", event.to_dict())
        ended = next((e for e in events if isinstance(e, RoundEnded)), None)
        finished = next((e for e in events if isinstance(e, MatchEnded)), None)
        if ended is not None:
            self._finish_round(ended.to_dict())
        if finished is not None:
            self._finish_match(finished)

    def _finish_round(self, summary: dict[str, Any]) -> None:
        round_ = self.rounds[-1]
        round_["result"] = {
            "final_state_hash": self.match.state_hash(),
            "last_hash": self._last.hex(),
            "entries": len(round_["log"]),
            "summary": summary,
            "ended_at": self._now(),
        }
        round_["rng"]["seed"] = self._seed.hex()
        table = self.table()
        record = signed_record(table, round_)
        digest = record_hash(record)
        round_["signature"] = {
            "key_id": self.signer.key_id,
            "signature": self.signer.sign(round_message(digest)).hex(),
            "record_hash": digest.hex(),
            "record": record,
        }

    def _finish_match(self, finished: MatchEnded) -> None:
        pool = self.entry_cents * self.match.seats
        fee, payouts = split_pool(pool, self.fee_bps, 1)
        winner = self.users[finished.winner]
        self.settlement = {
            "id": f"settle:{self.table_id}",
            "fee_bps": self.fee_bps,
            "pool_cents": pool,
            "fee_cents": fee,
            "winners": [winner],
            "payouts_cents": payouts,
        }
        self.result = {
            "reason": finished.reason,
            "winner_user_id": winner,
            "winner_seat": finished.winner,
            "pool_cents": pool,
            "fee_cents": fee,
            "payouts": [{"user_id": winner, "amount_cents": payouts[0]}],
        }

    # --- playing --------------------------------------------------------------------------------
    def play(self) -> SyntheticTable:
        """Play the whole match: bots act from their views, timers fire when nobody acts."""
        self._begin_round(1, tuple(self.match.events))
        self._resolve_chance()
        for _ in range(MAX_INPUTS):
            if self.match.over:
                return self
            self._step()
        raise RuntimeError("the synthetic match did not finish")

    def _user_input(self, seat: int, action: dict[str, Any]) -> None:
        self._input(action, {"user": self.users[seat], "action_id": f"a{self._clock}"})
        self._clock += 1

    def _timeout(self) -> None:
        deadline = self.match.current_deadline()
        assert deadline is not None
        self._input(
            {"type": "timeout", "token": deadline.token},
            {"deadline": self._clock, "timer": deadline.kind},
        )

    def _step(self) -> None:
        current = self.match.round
        assert current is not None
        if current.phase == "claim_window":
            for seat in current.players:
                if seat != current.turn and seat not in current.burned:
                    action = self.bots[seat].act(player_view(self.match, seat, hints=False))
                    if action is not None:
                        self._user_input(seat, action)
            self._timeout()
            return
        if current.phase == "deciding":
            ask = [s for s in current.seats if s != current.dealer and s not in current.decisions]
        elif current.phase == "dealer_deciding":
            ask = [current.dealer]
        else:
            assert current.turn is not None
            ask = [current.turn]
        for seat in ask:
            action = self.bots[seat].act(player_view(self.match, seat, hints=False))
            if action is not None:
                self._user_input(seat, action)
                return
        self._timeout()

    # --- the bundle -----------------------------------------------------------------------------
    def table(self) -> dict[str, Any]:
        """The bundle's ``table`` section."""
        return {
            "id": self.table_id,
            "game": "cacheta",
            "preset": "cacheta-raiz",
            "options": self.options.to_dict(),
            "seat_count": self.match.seats,
            "entry_cents": self.entry_cents,
            "currency": "BRL",
            "fee_bps": self.fee_bps,
            "status": "finished" if self.match.over else "running",
            "result": self.result,
        }

    def bundle(self) -> dict[str, Any]:
        """The dispute bundle of the table (every finished round)."""
        escrow = account_id("table_escrow", "BRL", self.table_id)
        transfers = []
        seats = []
        for seat, user in enumerate(self.users):
            entry_id = f"entry:{self.table_id}:{seat + 1}" if self.entry_cents else None
            seats.append({"engine_seat": seat, "user_id": user, "entry_transfer_id": entry_id})
            if entry_id:
                transfers.append(
                    _transfer(
                        entry_id,
                        "entry_fee",
                        self.entry_cents,
                        account_id("player_wallet", "BRL", user),
                        escrow,
                    )
                )
        settlement = self.settlement
        if settlement is not None:
            if settlement["fee_cents"]:
                house = account_id("house_revenue", "BRL", None)
                transfers.append(
                    _transfer(
                        f"{settlement['id']}/fee",
                        "house_fee",
                        settlement["fee_cents"],
                        escrow,
                        house,
                    )
                )
            if settlement["payouts_cents"][0]:
                wallet = account_id("player_wallet", "BRL", settlement["winners"][0])
                transfers.append(
                    _transfer(
                        f"{settlement['id']}/payout/0",
                        "payout",
                        settlement["payouts_cents"][0],
                        escrow,
                        wallet,
                    )
                )
        finished = [round_ for round_ in self.rounds if round_["result"] is not None]
        return {
            "format": BUNDLE_FORMAT,
            "exported_at": _BASE_TIME.isoformat(),
            "subject": {
                "table_id": self.table_id,
                "round_id": finished[-1]["id"] if finished else None,
            },
            "table": self.table(),
            "seats": seats,
            "rounds": finished,
            "money": {
                "currency": "BRL",
                "escrow": {"account_id": escrow, "balance_cents": 0, "closed": self.match.over},
                "transfers": transfers,
                "settlement": settlement,
            },
            "checkpoints": [],
            "public_keys": [
                {
                    "key_id": self.signer.key_id,
                    "algorithm": SIGNATURE_ALGORITHM,
                    "public_key": self.signer.public_key.hex(),
                    "created_at": _BASE_TIME.isoformat(),
                }
            ],
        }


def _transfer(transfer_id: str, kind: str, amount: int, debit: str, credit: str) -> dict[str, Any]:
    return {
        "id": transfer_id,
        "kind": kind,
        "amount_cents": amount,
        "debit_account_id": debit,
        "credit_account_id": credit,
        "reverses_id": None,
        "reference": {},
        "created_at": _BASE_TIME.isoformat(),
    }


def synthetic_bundle(
    options: RummyOptions,
    seats: int,
    signer: Signer,
    *,
    index: int = 0,
    master_seed: bytes = b"synthetic",
) -> dict[str, Any]:
    """The bundle of one finished bot match."""
    table = SyntheticTable(options, seats, signer=signer, index=index, master_seed=master_seed)
    return table.play().bundle()
