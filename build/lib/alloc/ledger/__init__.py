"""The usage ledger: every interval a workload runs, charged or not, by budget path; window
queries give each budget node's charged usage for the next round's fair share."""

from alloc.ledger.ledger import Ledger
from alloc.ledger.sqlite import SQLiteStore
from alloc.ledger.store import Interval, LedgerStore, MemoryStore

__all__ = ["Interval", "Ledger", "LedgerStore", "MemoryStore", "SQLiteStore"]
