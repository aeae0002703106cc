"""Wallet: the API over the ledger (balances, statements, money in and out, webhook)."""

from __future__ import annotations

from app.wallet.controllers import (
    AdminAccountsController,
    AdminWalletsController,
    PaymentWebhookController,
    WalletController,
)
from app.wallet.service import WalletService

__all__ = (
    "AdminAccountsController",
    "AdminWalletsController",
    "PaymentWebhookController",
    "WalletController",
    "WalletService",
)
