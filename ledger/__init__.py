"""Wallet ledger: accounts and double-entry transfers. The only code that writes balances."""
