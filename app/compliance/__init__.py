"""Compliance: round verification, signatures, checkpoints, dispute bundles, access audit."""
