"""The transaction coordinator: Kafka's TransactionCoordinator state machine, transaction versions 1 and 2.

InitProducerId gives a transactional id its producer id and bumps the epoch each time, aborting the
transaction the previous instance left open (Kafka fences it with one bump, aborts, then bumps again for
the new instance). AddPartitionsToTxn / AddOffsetsToTxn start a transaction and grow it; EndTxn writes
the COMMIT or ABORT marker to each of its partitions and applies (or drops) its TxnOffsetCommit offsets.
EndTxn v5 (transaction version 2, KIP-890 part 2) bumps the epoch at every transaction end: the markers
carry the new epoch, which the response gives the producer (a new producer id once the epoch is
exhausted). A transaction older than its timeout is aborted with the epoch bumped, so its producer is
fenced (under transaction version 2 an exhausted epoch moves to a new producer id in that abort); an id
with no transaction open and no change for ``id_expiration_ms`` is forgotten (Kafka's
transactional.id.expiration.ms). The check runs before every request (Kafka: every 10 s for timeouts,
every hour for ids), so either happens at the first request after its time. Every change of a
transactional id's state is journaled (fsynced) in the data file, as Kafka writes __transaction_state, so
a restarted coordinator resumes it. Everything runs under the cluster state's lock.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, Optional

from kcodec.errors import ErrorCode as E
from kcodec.records import ControlType, control_batch

from ..crash import kill_point
from ..groups.offsets import Committed
from ..log.producers import MAX_EPOCH
from ..log.transactions import COORDINATOR_EPOCH
from . import journal
from .metadata import TopicPartition, Transaction, TxnState

if TYPE_CHECKING:
    from ..state import ClusterState


log = logging.getLogger("kcodec_broker")

SUPPORTED_VERSIONS = (1, 2)  # the transaction.version feature levels this coordinator serves


@dataclass
class TransactionSettings:
    """Kafka's transaction.max.timeout.ms (InitProducerId refuses a longer transaction timeout), the
    finalized transaction.version feature: 2 (the default, as Kafka 4.x) lets clients that know it end
    each transaction with an epoch bump (EndTxn v5); 1 keeps them on transaction version 1;
    Kafka's transaction.two.phase.commit.enable: InitProducerId v6 (KIP-939) is served only with it; and
    Kafka's transactional.id.expiration.ms (7 days): how long an id with no transaction open may go
    without a change before the coordinator forgets it."""

    max_timeout_ms: int = 900_000
    transaction_version: int = 2
    two_phase_commit: bool = False
    id_expiration_ms: int = 7 * 24 * 3600 * 1000

    def __post_init__(self) -> None:
        if self.max_timeout_ms < 1:
            raise ValueError(f"transaction max timeout {self.max_timeout_ms} ms: it must be at least 1")
        if self.id_expiration_ms < 1:
            raise ValueError(f"transactional id expiration {self.id_expiration_ms} ms: it must be at least 1")
        if self.transaction_version not in SUPPORTED_VERSIONS:
            raise ValueError(f"transaction version {self.transaction_version}: supported are {SUPPORTED_VERSIONS}")


_NEVER = 2 ** 63
# A two-phase commit participant's timeout (Kafka's marker of one): its transaction never times out.
TWO_PHASE_TIMEOUT = 2 ** 31 - 1


class InitResult(NamedTuple):
    error: E
    producer_id: int = -1
    producer_epoch: int = -1
    ongoing_producer_id: int = -1  # InitProducerId v6 with keep_prepared_txn: the transaction kept open
    ongoing_epoch: int = -1


def now_ms() -> int:
    return int(time.time() * 1000)


def _deadline(txn: Transaction) -> int:
    """When the ongoing ``txn`` times out (ms); never for a two-phase commit participant's."""
    return _NEVER if txn.timeout_ms == TWO_PHASE_TIMEOUT else txn.start_ms + txn.timeout_ms


class TransactionCoordinator:
    def __init__(self, state: "ClusterState", settings: Optional[TransactionSettings] = None) -> None:
        self.state = state
        self.settings = settings or TransactionSettings()
        self.transactions: dict[str, Transaction] = {}
        self._check_at = _NEVER  # nothing times out or expires before this (ms): expire() skips until then
        with state.lock:
            self._restore()
            self._abort_orphans()

    # -- InitProducerId ------------------------------------------------------------------------------
    def init_producer_id(self, transactional_id: str, timeout_ms: int, pid: int = -1, epoch: int = -1,
                         two_phase: bool = False, keep_prepared: bool = False) -> InitResult:
        """``pid``/``epoch`` (v3+, KIP-360) name the caller's current ones. v6 (KIP-939): ``two_phase``
        makes the id a two-phase commit participant, whose transactions no timeout aborts (so any
        timeout is accepted); ``keep_prepared`` keeps an open transaction for the caller to commit or
        abort with the new epoch, instead of aborting it, and answers its producer id and epoch too."""
        if two_phase:
            timeout_ms = TWO_PHASE_TIMEOUT
        elif not 0 < timeout_ms <= self.settings.max_timeout_ms:
            return InitResult(E.INVALID_TRANSACTION_TIMEOUT)
        txn = self.transactions.get(transactional_id)
        if txn is None:
            new_pid, new_epoch = self._allocate()
            txn = self.transactions[transactional_id] = Transaction(transactional_id, new_pid, new_epoch, timeout_ms)
            self._save(txn)
            return InitResult(E.NONE, new_pid, new_epoch)
        named = pid >= 0 or epoch >= 0
        if named and (pid, epoch) != (txn.producer_id, txn.producer_epoch):
            if not self._retried_init(txn, pid, epoch):
                return InitResult(E.PRODUCER_FENCED)
            return InitResult(E.NONE, txn.producer_id, txn.producer_epoch)  # the answer the retry lost
        kept = InitResult(E.NONE)
        if txn.ongoing and keep_prepared:
            if txn.producer_epoch >= MAX_EPOCH - 1:  # a new producer id could not end it (its markers' id)
                return InitResult(E.INVALID_TXN_STATE)
            kept = InitResult(E.NONE, -1, -1, txn.producer_id, txn.producer_epoch)
        elif txn.ongoing:
            self._fence_and_abort(txn)
        self._bump_epoch(txn)
        if not named:
            txn.last_epoch = -1  # Kafka: only a caller naming its epoch may retry
        txn.timeout_ms = timeout_ms
        if not txn.ongoing:
            txn.state = TxnState.EMPTY
        self._save(txn)
        return kept._replace(producer_id=txn.producer_id, producer_epoch=txn.producer_epoch)

    @staticmethod
    def _retried_init(txn: Transaction, pid: int, epoch: int) -> bool:
        """Whether an InitProducerId naming ``pid``/``epoch`` repeats the one that made the current epoch
        (KIP-360, Kafka's lastProducerEpoch): the same id, or the previous one whose epoch was exhausted."""
        same_id = pid == txn.producer_id or (pid == txn.previous_producer_id and epoch >= MAX_EPOCH - 1)
        return same_id and epoch >= 0 and epoch == txn.last_epoch and not txn.ongoing

    def _bump_epoch(self, txn: Transaction) -> None:
        """The next epoch, or a new producer id at epoch 0 once the epoch is exhausted."""
        txn.last_epoch = txn.producer_epoch
        if txn.producer_epoch >= MAX_EPOCH - 1:
            self._rotate(txn)
        else:
            txn.producer_epoch += 1
            self.state.logs.producer_ids.set_epoch(txn.producer_id, txn.producer_epoch, now_ms())

    def _rotate(self, txn: Transaction) -> None:
        """A new producer id at epoch 0; the old one is kept for a retry that names it."""
        txn.previous_producer_id = txn.producer_id
        txn.producer_id, txn.producer_epoch = self._allocate()

    def _allocate(self) -> tuple[int, int]:
        _, pid, epoch = self.state.logs.init_producer_id(-1, -1)  # journaled, never given twice
        return pid, epoch

    # -- the transaction's members -------------------------------------------------------------------
    def check_producer(self, transactional_id: str, pid: int, epoch: int) -> tuple[E, Optional[Transaction]]:
        """The transaction of ``transactional_id`` when ``pid`` and ``epoch`` are its current ones."""
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != pid:
            return E.INVALID_PRODUCER_ID_MAPPING, None
        if txn.producer_epoch != epoch:
            return E.PRODUCER_FENCED, None
        return E.NONE, txn

    def add_partitions(self, transactional_id: str, pid: int, epoch: int,
                       partitions: Iterable[TopicPartition], transaction_version: int = 1) -> E:
        """``transaction_version`` 2: the add of a producer on transaction version 2 (AddPartitionsToTxn
        v4+, a Produce v12's implicit add), as Kafka derives it from the request."""
        error, txn = self.check_producer(transactional_id, pid, epoch)
        if txn is not None:
            added = set(partitions) - txn.partitions
            if added or not txn.ongoing:  # journaled only when it changes (Kafka answers at once too)
                self._begin(txn, transaction_version)
                txn.partitions.update(added)
                self._save(txn, sync=False)
        return error

    def in_transaction(self, transactional_id: str, pid: int, epoch: int, partition: TopicPartition) -> E:
        """AddPartitionsToTxn's verify-only answer (and a transactional Produce's check)."""
        error, txn = self.check_producer(transactional_id, pid, epoch)
        if txn is None:
            return error
        return E.NONE if txn.ongoing and partition in txn.partitions else E.INVALID_TXN_STATE

    def add_group(self, transactional_id: str, pid: int, epoch: int, group: str,
                  transaction_version: int = 1) -> E:
        """AddOffsetsToTxn (transaction version 1 in Kafka, whatever the client): the group's offsets may
        now be committed in the transaction."""
        error, txn = self.check_producer(transactional_id, pid, epoch)
        if txn is not None and (group not in txn.groups or not txn.ongoing):
            self._begin(txn, transaction_version)
            txn.groups.add(group)
            self._save(txn, sync=False)
        return error

    def stage_offsets(self, transactional_id: str, pid: int, epoch: int, group: str,
                      offsets: dict[TopicPartition, Committed], implicit_add: bool = False) -> E:
        """TxnOffsetCommit: offsets held until the transaction ends (``implicit_add``: v5, KIP-890)."""
        error, txn = self.check_producer(transactional_id, pid, epoch)
        if txn is None:
            return error
        if implicit_add:
            self.add_group(transactional_id, pid, epoch, group, transaction_version=2)
        elif not txn.ongoing or group not in txn.groups:
            return E.INVALID_TXN_STATE
        txn.offsets.setdefault(group, {}).update(offsets)
        self._save(txn, sync=False)
        return E.NONE

    def pending_offsets(self, group: str) -> set[TopicPartition]:
        """Partitions with offsets of ``group`` waiting in an open transaction (OffsetFetch require_stable)."""
        return {tp for t in self.transactions.values() if t.ongoing for tp in t.offsets.get(group, ())}

    # -- EndTxn --------------------------------------------------------------------------------------
    def end(self, transactional_id: str, pid: int, epoch: int, commit: bool) -> E:
        error, txn = self.check_producer(transactional_id, pid, epoch)
        if txn is None:
            return error
        if txn.ongoing:
            self._complete(txn, commit)
            return E.NONE
        # a retried EndTxn of the transaction just completed succeeds again; anything else is out of turn
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        return E.NONE if txn.state is done else E.INVALID_TXN_STATE

    def end_v2(self, transactional_id: str, pid: int, epoch: int, commit: bool) -> tuple[E, int, int]:
        """EndTxn v5 (transaction version 2): (error, producer id, epoch the producer continues with).

        Kafka's rules: the epoch is bumped at every end, so a retried EndTxn carries the epoch before the
        bump (or, after a producer id rotation, the old id and its last epoch) and succeeds again for the
        same outcome; an abort with no transaction open is allowed and bumps the epoch too."""
        txn = self.transactions.get(transactional_id)
        if txn is None:
            return E.INVALID_PRODUCER_ID_MAPPING, -1, -1
        retry_rotated = (pid == txn.previous_producer_id and epoch == MAX_EPOCH - 1 and txn.producer_epoch == 0)
        if pid != txn.producer_id and not retry_rotated:
            return E.INVALID_PRODUCER_ID_MAPPING, -1, -1
        completed = txn.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        retry = completed and (retry_rotated or txn.producer_epoch == epoch + 1)
        if not retry and (pid, epoch) != (txn.producer_id, txn.producer_epoch):
            return E.PRODUCER_FENCED, -1, -1
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if retry:
            error = E.NONE if txn.state is done else E.INVALID_TXN_STATE
        elif txn.ongoing:
            self._complete(txn, commit, bump=True)
            error = E.NONE
        elif not commit:  # Empty or completed, current epoch: an abort that only bumps the epoch
            self._bump_epoch(txn)
            txn.finish(committed=False)
            self._save(txn)
            error = E.NONE
        else:
            error = E.INVALID_TXN_STATE
        return (error, txn.producer_id, txn.producer_epoch) if error == E.NONE else (error, -1, -1)

    def _begin(self, txn: Transaction, transaction_version: int) -> None:
        txn.begin(now_ms())
        txn.transaction_version = transaction_version

    def _due(self, txn: Transaction) -> int:
        """When expire() next has work for ``txn`` (ms): an open transaction at its timeout; an id with
        none open ``id_expiration_ms`` after its last change (Kafka never expires an Ongoing one)."""
        return _deadline(txn) if txn.ongoing else txn.updated_ms + self.settings.id_expiration_ms

    def expire(self, now: Optional[int] = None) -> None:
        """Abort, fencing the producer, every transaction open longer than its timeout, and forget every
        transactional id idle past its expiration. Runs before every request, so it looks at the ids only
        once the earliest of those times has passed."""
        now = now_ms() if now is None else now
        if now <= self._check_at:
            return
        check_at = _NEVER
        expired: list[str] = []
        for tid, txn in self.transactions.items():
            if self._due(txn) < now:
                if not txn.ongoing:
                    expired.append(tid)
                    continue
                self._fence_and_abort(txn)
            check_at = min(check_at, self._due(txn))
        for tid in expired:  # Kafka's tombstone in __transaction_state: a restart does not bring it back
            del self.transactions[tid]
            self.state.logs.forget_txn_state(tid)
        if expired:
            self.state.logs.flush(sync=False)  # a lost tombstone only means the id expires again
        self._check_at = check_at

    def _fence_and_abort(self, txn: Transaction) -> None:
        """Kafka's prepareFenceProducerEpoch then abort: the markers carry the bumped epoch, so the old
        producer's writes and requests are refused from now on. One bump under either transaction version,
        as Kafka 4.1+ (KAFKA-19367: 4.0 bumped again for TV2's markers, overflowing at epoch 32766).

        Under transaction version 2 (the version of the transaction's last add, Kafka's
        clientTransactionVersion) an exhausted epoch also moves the id to a new producer id at epoch 0
        once the markers (old id, 32767) are written, as Kafka since KAFKA-20090: the fenced producer's
        late EndTxn v5 abort or InitProducerId, naming its old id and epoch 32766, is then a retry
        answered with the new id, and nobody goes on at 32767."""
        fenced = txn.producer_epoch
        if fenced < MAX_EPOCH:
            txn.producer_epoch += 1
            self.state.logs.producer_ids.set_epoch(txn.producer_id, txn.producer_epoch, now_ms())
        rotate = txn.transaction_version >= 2 and fenced >= MAX_EPOCH - 1
        if rotate:
            txn.last_epoch = fenced  # what the fenced producer names in a retry
        self._complete(txn, commit=False, rotate=rotate)

    def _complete(self, txn: Transaction, commit: bool, bump: bool = False, rotate: bool = False) -> None:
        """End the transaction as Kafka's coordinator does: the decision first (PREPARE_COMMIT or
        PREPARE_ABORT, journaled and fsynced with the markers' producer id and epoch), then the markers
        and the offsets, then COMPLETE. A kill after the decision leaves it for the restart to finish
        (``_finish``), so the markers and the offsets are applied all or not at all. ``bump`` (transaction
        version 2): the markers carry the next epoch, which the producer continues with (a new producer
        id when exhausted). ``rotate``: a new producer id, the markers carrying the old one."""
        kill_point("txn.deciding")
        marker = (txn.producer_id, min(txn.producer_epoch + 1, MAX_EPOCH) if bump else txn.producer_epoch)
        if bump:
            self._bump_epoch(txn)
        elif rotate:
            self._rotate(txn)
        txn.prepare(commit, marker)
        self._save(txn)
        kill_point("txn.prepared")
        self._finish(txn)

    def _finish(self, txn: Transaction, recovering: bool = False) -> None:
        """A prepared transaction's markers, its offsets on commit, then COMPLETE (the markers in the same
        write). ``recovering``: after a restart, a marker goes only where the producer's transaction is
        still open (one the kill left unwritten)."""
        commit = txn.state is TxnState.PREPARE_COMMIT
        kind = ControlType.COMMIT if commit else ControlType.ABORT
        pid, epoch = txn.marker
        for topic_name, index in sorted(txn.partitions):
            topic = self.state.topics.get(topic_name)
            if topic is None or not 0 <= index < len(topic.replicas):  # deleted meanwhile
                continue
            if not recovering or pid in self.state.logs.log(topic.topic_id, index).txns.open:
                self._write_marker(topic.topic_id, index, kind, pid, epoch)
                kill_point("txn.marker")
        if commit and txn.offsets:
            for group, offsets in txn.offsets.items():
                for (topic_name, index), committed in offsets.items():
                    if topic_name in self.state.topics:
                        self.state.offsets.commit(group, topic_name, index, committed)
            self.state.save()
            kill_point("txn.offsets")
        txn.finish(commit)
        self._save(txn)  # in the same write as the markers
        kill_point("txn.completed")

    def _write_marker(self, topic_id: Any, index: int, kind: ControlType, pid: int, epoch: int) -> None:
        """A marker, in the partition leader's epoch (Kafka's leader stamps every batch it appends)."""
        batch = control_batch(kind, pid, epoch, COORDINATOR_EPOCH, timestamp=now_ms())
        epoch_now = self.state.leadership.epoch_of(topic_id, index)
        self.state.logs.append(topic_id, index, batch, False, -1, -1, 0, epoch_now)

    # -- persistence ---------------------------------------------------------------------------------
    def _save(self, txn: Transaction, sync: bool = True) -> None:
        """Journal the id's state before the answer (Kafka answers once __transaction_state holds it),
        with what the request appended before it (markers) in the same write. Epochs and ends are fsynced
        (a fence must survive a machine crash); a transaction's growth (``sync`` False) only written, in
        the OS cache at once, and fsynced with the next fsync of the file (an acks=-1 Produce, EndTxn).
        Every change is the id's activity (Kafka's txnLastUpdateTimestamp), which its expiry counts from."""
        txn.updated_ms = now_ms()
        self._check_at = min(self._check_at, self._due(txn))
        self.state.logs.journal_txn_state(txn.transactional_id, journal.encode(txn))
        self.state.logs.flush(sync=sync)

    def _restore(self) -> None:
        """The transactional ids the data file holds, their open transactions and timeouts included (an
        entry journaled before its last change's time was kept counts from now)."""
        now = now_ms()
        for tid, data in self.state.logs.txn_states.items():
            txn = journal.decode(tid, data)
            if txn is None:
                continue
            if txn.updated_ms < 0:
                txn.updated_ms = now
            self.transactions[tid] = txn
            self.state.logs.producer_ids.seen(txn.producer_id, txn.producer_epoch, now)
            self.state.logs.producer_ids.set_epoch(txn.producer_id, txn.producer_epoch, now)
            if txn.preparing:  # decided before a kill: finish what the decision says
                log.info("completing the %s of transactional id %r a restart interrupted", txn.state.value, tid)
                self._finish(txn, recovering=True)
            self._check_at = min(self._check_at, self._due(txn))

    def _abort_orphans(self) -> None:
        """Transactions left open in the data file whose coordinator state is gone (a journal from before
        it was kept, or an id whose entry was lost): aborted at start, so the partitions' last stable
        offsets move on."""
        resumed = {t.producer_id for t in self.transactions.values() if t.ongoing}
        aborted = 0
        for (topic_id, index), plog in list(self.state.logs.logs.items()):
            for pid in [p for p in plog.txns.open if p not in resumed]:
                entry = plog.producers.get(pid)
                self._write_marker(topic_id, index, ControlType.ABORT, pid, entry.epoch if entry else 0)
                aborted += 1
        if aborted:
            self.state.logs.flush(sync=True)

    # -- admin ---------------------------------------------------------------------------------------
    def get(self, transactional_id: str) -> Optional[Transaction]:
        return self.transactions.get(transactional_id)
