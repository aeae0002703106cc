"""What the verifier tests share: the development signer, a forger's edits, the failure a
bundle gets."""

from __future__ import annotations

import uuid

from app.compliance.bundle import verify_bundle
from app.compliance.record import record_hash
from app.compliance.signing import Signer, round_message
from app.compliance.verify import signed_record
from app.config import DEV_SIGNING_KEYRING
from app.tables.roundlog import entry_hash, genesis_hash

SIGNER = Signer.from_keyring(DEV_SIGNING_KEYRING)


def failure(bundle, **kwargs) -> tuple[str, str]:
    """The check and item of the first failure of ``bundle`` (which must fail)."""
    report = verify_bundle(bundle, **kwargs)
    assert not report.ok
    assert report.failure is not None
    return report.failure.check, report.failure.item


def played_round(bundle) -> dict:
    """A round in which cards were discarded."""
    return next(
        r for r in bundle["rounds"] if any(e["body"].get("type") == "discarded" for e in r["log"])
    )


def log_entry(round_, predicate) -> dict:
    """The first log entry of ``round_`` that ``predicate`` holds for."""
    return next(e for e in round_["log"] if predicate(e))


def rechain_and_resign(bundle, round_, signer=SIGNER) -> None:
    """What a forger with the signing key would do after editing a round."""
    previous = genesis_hash(uuid.UUID(round_["id"]), round_["commitment"])
    for entry in round_["log"]:
        previous = entry_hash(previous, entry["seq"], entry["kind"], entry["body"])
        entry["hash"] = previous.hex()
    round_["result"]["last_hash"] = previous.hex()
    round_["result"]["entries"] = len(round_["log"])
    sign(round_, signed_record(bundle["table"], round_), signer)


def sign(round_, record, signer=SIGNER) -> None:
    """Sign ``record`` as ``round_``'s record."""
    digest = record_hash(record)
    round_["signature"] = {
        "key_id": signer.key_id,
        "signature": signer.sign(round_message(digest)).hex(),
        "record_hash": digest.hex(),
        "record": record,
    }
