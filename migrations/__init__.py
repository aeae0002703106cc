"""Alembic migrations: one branch per service schema (``game``, ``ledger``, ``rng``)."""
