"""Transactions (KIP-98): the transaction coordinator's state machine, markers, pending offsets.

The coordinator (coordinator.py) keeps one Transaction per transactional id in memory, each change
journaled in the data file (journal.py) so that a restart resumes it; ending a
transaction writes its COMMIT or ABORT marker to every partition at once, so the Prepare* states of
Kafka's coordinator never last past a request (and CONCURRENT_TRANSACTIONS is never needed).
"""

from .coordinator import TransactionCoordinator, TransactionSettings
from .metadata import Transaction, TxnState

__all__ = ["Transaction", "TransactionCoordinator", "TransactionSettings", "TxnState"]
