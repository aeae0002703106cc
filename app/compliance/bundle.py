"""Dispute bundles: one JSON document that proves a match with no database (pure).

Format ``raiz/dispute-bundle/1`` (``docs/compliance.md`` has the field-by-field list)::

    {"format", "exported_at", "subject": {"table_id", "round_id"},
     "table": {"id", "game", "preset", "options", "seat_count", "entry_cents", "currency",
               "fee_bps", "status", "result"},
     "seats": [{"engine_seat", "user_id", "entry_transfer_id"}],
     "rounds": [{"id", "number", "rng_round_id", "commitment", "rng_version", "start_state",
                 "start_state_hash", "created_at",
                 "log": [{"seq", "kind", "body", "hash"}],
                 "result": {"final_state_hash", "last_hash", "entries", "summary", "ended_at"},
                 "rng": {"version", "commitment", "seed", "client_seeds", "contributors",
                         "streams": [{"label", "fixed"}]},
                 "signature": {"key_id", "signature", "record_hash", "record"},
                 "inclusion": {"checkpoint_id", "leaf_index", "audit_path"} | null}],
     "money": {"currency", "escrow": {"account_id", "balance_cents", "closed"},
               "transfers": [{"id", "kind", "amount_cents", "debit_account_id",
                              "credit_account_id", "reverses_id", "reference", "created_at"}],
               "settlement": {"id", "fee_bps", "pool_cents", "fee_cents", "winners",
                              "payouts_cents"} | null} | null,
     "checkpoints": [{"id", "tree_size", "root", "key_id", "signature", "created_at"}],
     "public_keys": [{"key_id", "algorithm", "public_key", "created_at"}]}

Hashes and signatures are lowercase hex; public keys are hex of the raw 32 bytes.  Every
finished round of the table is in the bundle (round 1 anchors the start states, the last one
carries the money), so :func:`verify_bundle` checks the whole match.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from app.compliance.failures import Failure, RoundOutcome, VerificationFailed
from app.compliance.money import check_money
from app.compliance.verify import verify_round

__all__ = ("BUNDLE_FORMAT", "BundleReport", "bundle_keys", "verify_bundle")

BUNDLE_FORMAT: Final = "raiz/dispute-bundle/1"


@dataclass(slots=True)
class BundleReport:
    """The outcome of verifying (some rounds of) one table's bundle."""

    table_id: str
    rounds: list[RoundOutcome] = field(default_factory=list)
    failure: Failure | None = None
    """A failure outside any one round (format, money, missing rounds)."""
    failed_round: str | None = None
    """The round the failure belongs to, if any."""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether everything verified."""
        return self.failure is None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "ok": self.ok,
            "table_id": self.table_id,
            "failure": None if self.failure is None else self.failure.to_dict(),
            "failed_round": self.failed_round,
            "rounds": [outcome.to_dict() for outcome in self.rounds],
            "notes": list(self.notes),
        }


def bundle_keys(bundle: Mapping[str, Any]) -> dict[str, bytes]:
    """The public keys a bundle carries, by key id."""
    return {
        key["key_id"]: bytes.fromhex(key["public_key"]) for key in bundle.get("public_keys", ())
    }


def verify_bundle(
    bundle: Mapping[str, Any],
    *,
    round_ids: Collection[str] | None = None,
    public_keys: Mapping[str, bytes] | None = None,
    allow_fixed_streams: bool = False,
) -> BundleReport:
    """Verify every round of the bundle (or only ``round_ids``) and, when the match ended,
    its money.  ``public_keys`` pins the signing keys (default: the bundle's own)."""
    table = bundle.get("table")
    report = BundleReport(table_id=str(table.get("id") if isinstance(table, Mapping) else None))
    try:
        _verify(bundle, report, round_ids, public_keys, allow_fixed_streams)
    except VerificationFailed as failed:
        report.failure = failed.failure
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        report.failure = Failure("format", "bundle", f"malformed: {error!r}")
    return report


def _check_subject(
    subject: Mapping[str, Any], table: Mapping[str, Any], rounds: list[Mapping[str, Any]]
) -> None:
    """The disputed round is one of the bundle's rounds (a bundle without it proves nothing
    about it), of the bundle's table."""
    table_id = subject.get("table_id")
    if table_id is not None and table_id != str(table["id"]):
        raise VerificationFailed(
            "format", "subject", f"names table {table_id}, the bundle is table {table['id']}"
        )
    round_id = subject.get("round_id")
    if round_id is not None and all(item["id"] != round_id for item in rounds):
        raise VerificationFailed("format", f"round {round_id}", "missing from the bundle")


def _check_seats(seats: list[Mapping[str, Any]], seat_count: int) -> None:
    """The seats are the match's engine seats 0 to n-1, each once, each a different player
    (the driver numbers the seated players in chair order when the match starts)."""
    engine_seats = sorted(seat["engine_seat"] for seat in seats)
    users = {seat["user_id"] for seat in seats}
    if (
        len(engine_seats) != seat_count
        or engine_seats != list(range(seat_count))
        or len(users) != len(seats)
    ):
        raise VerificationFailed(
            "format",
            "seats",
            f"the match has seats 0 to {seat_count - 1}, each held by another player; the "
            f"bundle lists seats {engine_seats} held by {len(users)} players",
        )


def _verify(
    bundle: Mapping[str, Any],
    report: BundleReport,
    round_ids: Collection[str] | None,
    public_keys: Mapping[str, bytes] | None,
    allow_fixed_streams: bool,
) -> None:
    if bundle.get("format") != BUNDLE_FORMAT:
        raise VerificationFailed("format", "bundle", f"not a {BUNDLE_FORMAT} document")
    table = bundle["table"]
    if public_keys is None:
        keys = bundle_keys(bundle)
        report.notes.append(
            "signatures checked against the public keys inside the bundle; compare them with "
            "the keys the operator publishes (GET /audit/public-keys) or pin them"
        )
    else:
        keys = dict(public_keys)
    checkpoints = {checkpoint["id"]: checkpoint for checkpoint in bundle.get("checkpoints", ())}
    seats_list = bundle.get("seats", [])
    seats = {seat["engine_seat"]: seat["user_id"] for seat in seats_list}
    rounds = sorted(bundle["rounds"], key=lambda item: item["number"])
    if not rounds:
        raise VerificationFailed("format", "rounds", "the bundle holds no finished round")
    numbers = [item["number"] for item in rounds]
    if numbers != list(range(1, len(rounds) + 1)):
        missing = next(n for n in range(1, len(rounds) + 2) if n not in numbers)
        raise VerificationFailed("format", f"round {missing}", "missing from the bundle")
    _check_subject(bundle.get("subject") or {}, table, rounds)
    _check_seats(seats_list, int(rounds[0]["start_state"]["seats"]))
    previous: str | None = None
    for round_ in rounds:
        if round_ids is None or round_["id"] in round_ids:
            outcome = verify_round(
                table,
                round_,
                previous_final_state_hash=previous,
                seats=seats,
                keys=keys,
                checkpoints=checkpoints,
                allow_fixed_streams=allow_fixed_streams,
            )
            report.rounds.append(outcome)
            if outcome.failure is not None:
                report.failure = outcome.failure
                report.failed_round = outcome.round_id
                return
            if outcome.match_ended is not None:
                if round_ is not rounds[-1]:
                    raise VerificationFailed(
                        "replay", f"round {round_['number'] + 1}", "played after the match ended"
                    )
                try:
                    check_money(
                        table, seats_list, bundle.get("money"), outcome.match_ended, outcome.seats
                    )
                except VerificationFailed:
                    report.failed_round = outcome.round_id
                    raise
        previous = (round_.get("result") or {}).get("final_state_hash")
    last_checked = round_ids is None or rounds[-1]["id"] in round_ids
    ended = bool(report.rounds) and report.rounds[-1].match_ended is not None
    if table.get("status") == "finished" and last_checked and not ended:
        raise VerificationFailed(
            "money", "table", "the table is finished but its last round did not end the match"
        )
