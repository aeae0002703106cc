"""Seeded-RNG service: seeds, commitments, reveals and shuffles."""
