"""Entry tables: fee rates, seats paid through the ledger, rounds, timers and views."""
