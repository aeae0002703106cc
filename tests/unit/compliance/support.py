"""What the verifier tests share: the development signer, and the failure a bundle gets."""

from __future__ import annotations

from app.compliance.bundle import verify_bundle
from app.compliance.signing import Signer
from app.config import DEV_SIGNING_KEYRING

SIGNER = Signer.from_keyring(DEV_SIGNING_KEYRING)


def failure(bundle, **kwargs) -> tuple[str, str]:
    """The check and item of the first failure of ``bundle`` (which must fail)."""
    report = verify_bundle(bundle, **kwargs)
    assert not report.ok
    assert report.failure is not None
    return report.failure.check, report.failure.item
