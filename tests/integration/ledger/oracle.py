"""An in-memory model of the ledger's rules, written independently of ``ledger/``.

Each operation returns ``"ok"``, ``"replayed"`` or the refusal code, and applies its
effect only when accepted.  The order of the checks is the documented one: malformed
request, unknown transfer, idempotency (replay or conflict), closed account, already
refunded, funds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_TRANSFER_CENTS = 10**12

HOUSE, CASH_IN, CASH_OUT = "house", "cash_in", "cash_out"


def wallet(user: int) -> tuple[str, int]:
    return ("wallet", user)


def escrow(table: int) -> tuple[str, int]:
    return ("escrow", table)


@dataclass
class Oracle:
    balances: dict[Any, int] = field(default_factory=dict)
    transfers: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Transfer id -> the body it was recorded with."""
    entries: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """Entry transfer id -> (user, table, amount)."""
    refunded: set[str] = field(default_factory=set)
    closed: set[int] = field(default_factory=set)
    settlements: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def balance(self, account: Any) -> int:
        return self.balances.get(account, 0)

    def _move(self, debit: Any, credit: Any, amount: int) -> None:
        self.balances[debit] = self.balance(debit) - amount
        self.balances[credit] = self.balance(credit) + amount

    @staticmethod
    def _amount_problem(amount: int) -> str | None:
        if amount <= 0:
            return "amount_must_be_positive"
        if amount > MAX_TRANSFER_CENTS:
            return "amount_exceeds_limit"
        return None

    def _replay(self, transfer_id: str, body: tuple[Any, ...]) -> str | None:
        if transfer_id not in self.transfers:
            return None
        return "replayed" if self.transfers[transfer_id] == body else "idempotency_conflict"

    # -- operations --------------------------------------------------------------------

    def deposit(self, transfer_id: str, user: int, amount: int) -> str:
        body = ("deposit", user, amount)
        problem = self._amount_problem(amount) or self._replay(transfer_id, body)
        if problem:
            return problem
        self.transfers[transfer_id] = body
        self._move(CASH_IN, wallet(user), amount)
        return "ok"

    def withdraw(self, transfer_id: str, user: int, amount: int) -> str:
        body = ("withdrawal", user, amount)
        problem = self._amount_problem(amount) or self._replay(transfer_id, body)
        if problem:
            return problem
        if self.balance(wallet(user)) < amount:
            return "insufficient_funds"
        self.transfers[transfer_id] = body
        self._move(wallet(user), CASH_OUT, amount)
        return "ok"

    def take_entry(self, transfer_id: str, user: int, table: int, amount: int) -> str:
        body = ("entry_fee", user, table, amount)
        problem = self._amount_problem(amount) or self._replay(transfer_id, body)
        if problem:
            return problem
        if table in self.closed:
            return "account_closed"
        if self.balance(wallet(user)) < amount:
            return "insufficient_funds"
        self.transfers[transfer_id] = body
        self.entries[transfer_id] = (user, table, amount)
        self._move(wallet(user), escrow(table), amount)
        return "ok"

    def refund_entry(self, transfer_id: str, entry_id: str) -> str:
        if entry_id not in self.entries:
            return "transfer_not_found"
        user, table, amount = self.entries[entry_id]
        body = ("entry_refund", entry_id)
        problem = self._replay(transfer_id, body)
        if problem:
            return problem
        if table in self.closed:
            return "account_closed"
        if entry_id in self.refunded:
            return "entry_already_refunded"
        if self.balance(escrow(table)) < amount:
            return "insufficient_funds"
        self.transfers[transfer_id] = body
        self.refunded.add(entry_id)
        self._move(escrow(table), wallet(user), amount)
        return "ok"

    def settle(self, settlement_id: str, table: int, fee_bps: int, winners: list[int]) -> str:
        if not 0 <= fee_bps <= 10_000:
            return "invalid_fee_bps"
        request = (table, fee_bps, tuple(winners))
        if settlement_id in self.settlements:
            same = self.settlements[settlement_id] == request
            return "replayed" if same else "idempotency_conflict"
        if table in self.closed:
            return "account_closed"
        pool = self.balance(escrow(table))
        fee = pool * fee_bps // 10_000
        share, remainder = divmod(pool - fee, len(winners))
        self.settlements[settlement_id] = request
        self._move(escrow(table), HOUSE, fee)
        for position, winner in enumerate(winners):
            self._move(escrow(table), wallet(winner), share + (1 if position < remainder else 0))
        assert self.balance(escrow(table)) == 0
        return "ok"

    def close(self, table: int) -> str:
        if table in self.closed:
            return "ok"
        if self.balance(escrow(table)) != 0:
            return "escrow_not_empty"
        self.closed.add(table)
        return "ok"
