"""The cluster's state: brokers, topics, partitions and configs, and the rules that change them.

Every refusal is an AdminError carrying Kafka's error code and message; the handlers turn it into the
response field. The state is shared by all brokers of a cluster (one process) and, when a state file is
given, saved atomically after every change and loaded at start.
"""

from __future__ import annotations

import base64
import glob
import json
import logging
import os
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from kcodec.errors import ErrorCode

from . import configs as cfg
from .acl import Acl
from .admin_error import AdminError as AdminError
from .assignments import manual_assignment, require_running, validate_target
from .broker_configs import DynamicBrokerConfigs
from .client_metrics import ClientMetricsResources
from .quotas import ClientQuotas
from .credentials import Credentials
from .groups.offsets import CommittedOffsets
from .copies import DEFAULT_REPLICA_LAG_TIME_MAX_MS, Copy, FollowerCopies
from .leaders import Leadership, PartitionLeadership
from .log import DEFAULT_MAX_PARTITION_BYTES, DEFAULT_PRODUCER_ID_EXPIRATION_MS, LogStore
from .log.store import now_ms
from .quorum import Quorum
from .reassignments import Reassignment, completed, plan_cancel, plan_change
from .topic import SYSTEM_TOPICS, Topic, system_topic_configs, validate_topic_name

log = logging.getLogger("kcodec_broker")

STATE_FORMAT = 1
# A topic's partitions live in memory: a request for two billion of them must be refused, not tried.
MAX_PARTITIONS_PER_TOPIC = 10_000


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str  # the first listener's advertised endpoint
    port: int
    rack: Optional[str] = None
    endpoints: Mapping[str, tuple[str, int]] = field(default_factory=dict, hash=False)  # listener name: (host, port)

    def endpoint(self, listener: str) -> Optional[tuple[str, int]]:
        """Where a client of ``listener`` reaches this broker; None: the broker lacks that listener."""
        return self.endpoints.get(listener) if self.endpoints else (self.host, self.port)


class ClusterState:
    """Brokers and topics of one cluster, guarded by ``lock`` (the server holds it per request)."""

    def __init__(self, broker_ids: list[int], *, num_partitions: int = 1, default_replication_factor: int = 1,
                 auto_create_topics: bool = True, system_topic_partitions: int = 50,
                 max_partitions_per_topic: int = MAX_PARTITIONS_PER_TOPIC,
                 state_file: Optional[os.PathLike[str] | str] = None, cluster_id: Optional[str] = None,
                 max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
                 producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                 auto_leader_rebalance: bool = True) -> None:
        if num_partitions < 1:
            raise ValueError("num.partitions must be at least 1")
        if default_replication_factor < 1:  # above the broker count is allowed: creations then get 38
            raise ValueError("default.replication.factor must be at least 1")
        if system_topic_partitions < 1:
            raise ValueError("system topics need at least one partition")
        self.lock = threading.RLock()
        self.broker_ids = list(broker_ids)
        self.brokers: dict[int, BrokerInfo] = {}  # the running brokers
        self._controller: Optional[int] = None
        self.closing = False  # the whole cluster is stopping (Cluster.stop_async)
        self.leadership = Leadership(auto_leader_rebalance)  # leaders, ISRs and leader epochs; saved with the topics
        self.clock: Callable[[], int] = now_ms  # ms; the ISR's lag times (isr.py) read it, tests may replace it
        self.replica_lag_time_max_ms = DEFAULT_REPLICA_LAG_TIME_MAX_MS  # Kafka's replica.lag.time.max.ms
        self.quorum = Quorum()  # the KRaft quorum DescribeQuorum shows; not saved
        self.num_partitions = num_partitions
        self.max_partitions_per_topic = max_partitions_per_topic
        self.default_replication_factor = default_replication_factor
        self.auto_create_topics = auto_create_topics
        self.state_file = Path(state_file) if state_file is not None else None
        self.topics: dict[str, Topic] = {}
        self.names_version = 0  # bumped when a topic is created or deleted: what name caches are keyed by
        self.credentials = Credentials()  # SCRAM credentials (SASL); kept in the state file too
        self.offsets = CommittedOffsets()  # consumer groups' committed offsets; kept in the state file too
        self.created_acls: list[Acl] = []  # the ACLs CreateAcls added (the Authorizer's); kept in the state file too
        self.client_metrics = ClientMetricsResources()  # KIP-714 subscriptions; kept in the state file too
        self.client_quotas = ClientQuotas()  # KIP-546 quotas (kept, not enforced); kept in the state file too
        self.broker_configs = DynamicBrokerConfigs()  # broker configs set at run time; kept in the state file too
        self.cluster_id = cluster_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self._placements = 0
        if self.state_file is not None:
            self._remove_leftovers(self.state_file)
            if self.state_file.exists():
                self._load(self.state_file)
        for name in SYSTEM_TOPICS:
            if name not in self.topics:
                rf = min(3, len(self.broker_ids))
                self.topics[name] = Topic(name, uuid.uuid4(), self.assign(system_topic_partitions, rf),
                                          system_topic_configs(name, len(self.broker_ids)))
        # the data (batches, log starts) lives in a journal beside the state file: FILE.data
        self.logs = LogStore(self.data_file, max_partition_bytes, producer_id_expiration_ms)
        self.logs.load({t.topic_id for t in self.topics.values()})
        self.copies = FollowerCopies(self.logs)  # the followers that lag behind their partition's log; not saved
        self.leadership.copies = self.copies
        self.save()

    @property
    def data_file(self) -> Optional[Path]:
        return self.state_file.with_name(self.state_file.name + ".data") if self.state_file is not None else None

    # -- queries ---------------------------------------------------------------------------------------
    @property
    def controller_id(self) -> int:
        """The chosen controller while it runs, else the first running broker (as a quorum elects
        a new one), else the first broker."""
        with self.lock:
            if self._controller is not None and self._controller in self.brokers:
                return self._controller
            running = [b for b in self.broker_ids if b in self.brokers]
            return running[0] if running else self.broker_ids[0]

    def move_controller(self, node_id: Optional[int] = None) -> int:
        """Make ``node_id`` (default: the next running broker after the current one) the controller."""
        with self.lock:
            if node_id is None:
                node_id = self._next_running(self.controller_id)
                if node_id is None:
                    node_id = self.broker_ids[0]
            if node_id not in self.broker_ids:
                raise ValueError(f"no broker {node_id} in this cluster (brokers {self.broker_ids})")
            if self.brokers and node_id not in self.brokers:
                raise ValueError(f"broker {node_id} is stopped: it cannot become the controller")
            if node_id != self.controller_id:
                self.quorum.new_leader()
            self._controller = node_id
            return node_id

    def _next_running(self, after: int) -> Optional[int]:
        """The running broker after ``after`` in id order, wrapping around (None: none runs)."""
        running = [b for b in self.broker_ids if b in self.brokers and b != after]
        later = [b for b in running if b > after]
        return later[0] if later else running[0] if running else None

    def register(self, info: BrokerInfo) -> None:
        """A broker is up: it is advertised and leads its partitions again (or, with leaders kept, follows
        until an election: leaders.py)."""
        with self.lock:
            before = self.controller_id if self.brokers else None
            self.brokers[info.node_id] = info
            self.quorum.started(info.node_id, info.endpoints)
            if before is not None and before != self.controller_id:
                self.quorum.new_leader()
            if not self.leadership.starting(self.broker_ids):  # not the cluster's own start
                self.leadership.rebalance()
            self.leadership.broker_started(info.node_id, self.topics.values(), set(self.brokers))
            self.copies.replicate(self)
            self.progress_reassignments()
            self._settle_all()

    def unregister(self, node_id: int) -> None:
        """A broker stopped: no longer advertised; its partitions lead elsewhere or go offline (but for
        the whole cluster stopping: the leaders and epochs it ran with stay, for its next start)."""
        with self.lock:
            was_controller = self.controller_id == node_id
            up_before = self._up()
            if self.brokers.pop(node_id, None) is not None:
                self.quorum.stopped(node_id)
                if not self.closing:
                    if not self.leadership.starting(self.broker_ids):
                        self.leadership.rebalance()
                    self.leadership.broker_stopped(node_id, self.topics.values(), up_before, set(self.brokers))
                    self.copies.replicate(self)
                    self.progress_reassignments()
                    self._settle_all()
            if was_controller:  # the next running broker takes over, and keeps it when this one returns
                self._controller = self._next_running(node_id)
                if self._controller is not None:
                    self.quorum.new_leader()

    def topic(self, name: str) -> Topic:
        try:
            return self.topics[name]
        except KeyError:
            raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             "This server does not host this topic-partition.") from None  # Kafka's own words

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic:
        for t in self.topics.values():
            if t.topic_id == topic_id:
                return t
        raise AdminError(ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")

    def partition_leadership(self, topic: Topic, index: int) -> PartitionLeadership:
        """The leader (-1: offline), ISR and offline replicas of partition ``index`` (leaders.py)."""
        return self.leadership.current(topic, index, self._up())

    def leader(self, topic: Topic, index: int) -> int:
        return self.leadership.current(topic, index, self._up()).leader

    def leader_epoch(self, topic: Topic, index: int) -> int:
        """The partition's leader epoch: 0 at creation, one more at every change of its leader."""
        return self.leadership.epoch_of(topic.topic_id, index)

    def leader_error(self, topic: Topic, index: int, node_id: int, current_epoch: Optional[int],
                     leader_only: bool = True) -> ErrorCode:
        """Whether ``node_id`` may serve the partition as its leader (or, not ``leader_only``, as any replica,
        in the ISR or not: KIP-392) to a client that saw ``current_epoch`` (None: unchecked), in the order of
        Kafka's Partition.getLocalLog: a broker without a replica is NOT_LEADER_OR_FOLLOWER; a replica checks
        the epoch first (older: FENCED_LEADER_EPOCH, newer: UNKNOWN_LEADER_EPOCH), then that it leads."""
        if node_id not in topic.replicas[index]:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if current_epoch is not None:
            epoch = self.leader_epoch(topic, index)
            if current_epoch < epoch:
                return ErrorCode.FENCED_LEADER_EPOCH
            if current_epoch > epoch:
                return ErrorCode.UNKNOWN_LEADER_EPOCH
        if leader_only and self.leader(topic, index) != node_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.NONE

    def lagging_copy(self, topic: Topic, index: int, node_id: int) -> Optional[Copy]:
        """The copy a follower on ``node_id`` serves when it lags behind the log (copies.py), else None."""
        copy = self.copies.lagging(topic.topic_id, index, node_id)
        return copy if copy is not None and self.leader(topic, index) != node_id else None

    def pause_replication(self, node_id: int, paused: bool) -> None:
        """Stop (or resume) the copying of ``node_id``'s followers from their leaders (copies.py)."""
        if node_id not in self.broker_ids:
            raise ValueError(f"no broker {node_id} in this cluster (brokers {self.broker_ids})")
        with self.lock:
            if paused:
                self.copies.paused.add(node_id)
            else:
                self.copies.paused.discard(node_id)
            self.copies.replicate(self)
            self.progress_reassignments()
            self._settle_all()
            self.logs._wake()  # long polls on followers that caught up read again

    def elect_leader(self, topic: Topic, index: int, unclean: bool) -> ErrorCode:
        """A PREFERRED or UNCLEAN election (KIP-460) for one partition: NONE, or why none was held."""
        if unclean:
            code = self.leadership.elect_unclean(topic, index, self._up())
        else:
            code = self.leadership.elect_preferred(topic, index, self._up())
        if code == ErrorCode.NONE:
            self.quorum.record()  # a PartitionChangeRecord
            self.copies.replicate(self)
            if self.leadership.settle(topic, index, self._up()):
                self.save()
        return code

    def _settle_all(self) -> None:
        """After brokers stopped or started: a new epoch for every partition whose leader changed (none
        while the cluster is still starting), saved with the state."""
        if self.leadership.starting(self.broker_ids):
            return
        up = self._up()
        rose = [self.leadership.settle(t, i, up) for t in self.topics.values() for i in range(len(t.replicas))]
        if any(rose):
            self.save()

    def _up(self) -> set[int]:
        """Brokers that count as live: the running ones, or all of them before any has started (a
        state used without servers, as in unit tests)."""
        return set(self.brokers) if self.brokers else set(self.broker_ids)

    # -- reassignments (KIP-455; reassignments.py) ---------------------------------------------------------
    def reassign(self, topic: Topic, index: int, target: Optional[list[int]], allow_rf_change: bool = True) -> None:
        """Start, change or (``target`` None) cancel the reassignment of one partition; AdminError if
        Kafka's controller refuses it. It completes at once when every replica that stays is in sync."""
        before = self.partition_leadership(topic, index)
        original = list(topic.replicas[index])
        if target is None:
            replicas, isr = plan_cancel(topic, index, before.isr)
            topic.reassigning.pop(index, None)
            self._replace_replicas(topic, index, replicas, before, isr)
            self._settle_change(topic, index, original)
            log.info("cancelled the reassignment of %s-%d: replicas %s", topic.name, index, replicas)
        else:
            replicas, ongoing = plan_change(topic, index, target, self.broker_ids, allow_rf_change)
            if replicas == original and ongoing == topic.reassigning.get(index, Reassignment()):
                return  # no change: Kafka's PartitionChangeBuilder writes no record
            if ongoing.adding or ongoing.removing:
                topic.reassigning[index] = ongoing
            self._replace_replicas(topic, index, replicas, before)
            # completing at once is one change (one PartitionChangeRecord in Kafka): one epoch at most
            if not self._complete_reassignment(topic, index, original):
                self._settle_change(topic, index, original)
        self.quorum.record()  # the one PartitionChangeRecord, however far the change went
        self.save()

    def progress_reassignments(self) -> None:
        """Complete the reassignments whose replicas are now in sync (a broker started or stopped). Not
        once the last broker stopped: every broker then counts as live (``_up``)."""
        if not self.brokers:
            return
        done = sum(self._complete_reassignment(t, i) for t in self.topics.values() for i in list(t.reassigning))
        for _ in range(done):
            self.quorum.record()  # a PartitionChangeRecord each: the ISR grown and the reassignment complete
        if done:
            self.save()

    def _complete_reassignment(self, topic: Topic, index: int, original: Optional[list[int]] = None) -> bool:
        """Complete the partition's reassignment if it can, settling its epoch against ``original`` (the
        replicas before the request that started it, when that request completes it; else the current)."""
        ongoing = topic.reassigning.get(index)
        if ongoing is None:
            return False
        now = self.partition_leadership(topic, index)
        done = completed(topic.replicas[index], ongoing, now.isr)
        if done is None:
            log.info("reassignment of %s-%d pending: adding %s, removing %s", topic.name, index, ongoing.adding,
                     ongoing.removing)
            return False
        del topic.reassigning[index]
        before = list(topic.replicas[index]) if original is None else original
        self._replace_replicas(topic, index, done[0], now, done[1])
        self._settle_change(topic, index, before)
        log.info("reassignment of %s-%d complete: replicas %s", topic.name, index, done[0])
        return True

    def _replace_replicas(self, topic: Topic, index: int, replicas: list[int], before: PartitionLeadership,
                          isr: Optional[list[int]] = None) -> None:
        topic.replicas[index] = replicas
        self.leadership.reassigned(topic, index, before, self._up(), isr)
        self.copies.replicate(self)

    def _settle_change(self, topic: Topic, index: int, before: list[int]) -> None:
        """As PartitionChangeBuilder: a new leader, or a replica of ``before`` no longer listed, is a new
        leader epoch (saved by the callers)."""
        dropped = not set(topic.replicas[index]).issuperset(before)
        self.leadership.settle(topic, index, self._up(), dropped)

    # -- placement -------------------------------------------------------------------------------------
    def assign(self, partitions: int, replication_factor: int, first_partition: int = 0) -> list[list[int]]:
        """Round-robin replicas, starting each topic one broker further on, as Kafka spreads leaders."""
        ids = self.broker_ids
        start = self._placements % len(ids)
        self._placements += 1
        return [[ids[(start + p + r) % len(ids)] for r in range(replication_factor)]
                for p in range(first_partition, first_partition + partitions)]

    def _check_partition_limit(self, count: int) -> None:
        if count > self.max_partitions_per_topic:
            raise AdminError(ErrorCode.INVALID_PARTITIONS, f"{count} partitions exceed this broker's limit of "
                             f"{self.max_partitions_per_topic} per topic")

    def _check_replication_factor(self, rf: int) -> None:
        if rf < 1:
            raise AdminError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             "Replication factor must be larger than 0, or -1 to use the default value.")
        if rf > len(self.broker_ids):
            raise AdminError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"Unable to replicate the partition {rf} time(s): The target replication factor of "
                             f"{rf} cannot be reached because only {len(self.broker_ids)} broker(s) are registered or some "
                             "brokers have all their log directories cordoned.")

    # -- topic creation (KIP-4, KIP-464) ---------------------------------------------------------------
    def plan_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                   assignments: Optional[Mapping[int, list[int]] | list[tuple[int, list[int]]]] = None,
                   configs: Optional[dict[str, Optional[str]]] = None) -> Topic:
        """The topic a CreateTopics entry asks for, validated but not added.

        KIP-464's cases: partitions and replication factor both given -> used; both -1 with an assignment
        -> the assignment; either given with an assignment -> INVALID_REQUEST; only one given -> the
        other from the broker's default; neither and no assignment -> both defaults. Like Kafka's brokers
        since 2.4, at every CreateTopics version: v4 only tells clients that the broker does this (Java's
        client refuses -1 below v4 on its side; kafkajs sends -1 with v3).
        """
        validate_topic_name(name)
        if name in self.topics:
            raise AdminError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        folded = name.replace(".", "_")
        for other in self.topics:
            if other.replace(".", "_") == folded:
                raise AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                 f"Topic '{name}' collides with existing topic: {other}")
        try:
            overrides = cfg.validate_topic_configs(configs or {})
        except cfg.ConfigError as e:
            raise AdminError(ErrorCode.INVALID_CONFIG, str(e)) from None
        if assignments:
            pairs = list(assignments.items()) if isinstance(assignments, Mapping) else list(assignments)
            replicas = manual_assignment(pairs, num_partitions, replication_factor, self.broker_ids, self._up())
            self._check_partition_limit(len(replicas))  # kcodec's own limit, where Kafka checks its quota
            return Topic(name, uuid.uuid4(), replicas, overrides)
        if num_partitions == -1:
            num_partitions = self.num_partitions
        if replication_factor == -1:
            replication_factor = self.default_replication_factor
        if num_partitions < 1:
            raise AdminError(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid "
                             "non-positive value.")
        self._check_partition_limit(num_partitions)
        self._check_replication_factor(replication_factor)
        return Topic(name, uuid.uuid4(), self.assign(num_partitions, replication_factor), overrides)

    def add_topic(self, topic: Topic) -> Topic:
        self.topics[topic.name] = topic
        self.names_version += 1
        self.quorum.record()
        self._created(topic, 0)
        log.info("created topic %s (%d partitions, replication factor %d)", topic.name, len(topic.replicas),
                 topic.replication_factor)
        self.save()
        return topic

    def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                     configs: Optional[dict[str, Optional[str]]] = None) -> Topic:
        with self.lock:
            return self.add_topic(self.plan_topic(name, num_partitions, replication_factor, None, configs))

    # -- deletion (KIP-619) ----------------------------------------------------------------------------
    def check_deletable(self, topic: Topic) -> None:
        if topic.system:
            raise AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                             f"Topic {topic.name} is a system internal topic and cannot be deleted (KIP-619)")

    def delete_topic(self, topic: Topic) -> None:
        self.check_deletable(topic)
        del self.topics[topic.name]
        self.names_version += 1
        self.quorum.record()
        self.offsets.delete_topic(topic.name)
        self.leadership.forget(topic.topic_id)
        self.copies.forget(topic.topic_id)
        self.logs.drop_topic(topic.topic_id)
        log.info("deleted topic %s", topic.name)
        self.save()

    # -- partitions ------------------------------------------------------------------------------------
    def plan_partitions(self, topic: Topic, count: int, assignments: Optional[list[list[int]]]) -> list[list[int]]:
        """The replicas of the partitions a CreatePartitions entry adds, in the order of Kafka's
        ReplicationControlManager.createPartitions. The replication factor is the length of partition 0's
        whole replica list (Kafka reads the first partition of its map, key 0), a reassignment's adding and
        removing replicas included: Kafka neither refuses nor waits for a reassignment in progress."""
        have = len(topic.replicas)
        if count == have:
            raise AdminError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {have} partition(s).")
        if count < have:
            raise AdminError(ErrorCode.INVALID_PARTITIONS, f"The topic {topic.name} currently has {have} "
                             f"partition(s); {count} would not be an increase.")
        self._check_partition_limit(count)
        added = count - have
        if assignments is None:
            return self.assign(added, topic.replication_factor, have)
        if len(assignments) != added:
            raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {added} additional "
                             f"partition(s), but only {len(assignments)} assignment(s) were specified.")
        for i, replicas in enumerate(assignments):
            validate_target(replicas, self.broker_ids, topic.replication_factor)
            require_running(replicas, self._up(), have + i)
        return [list(a) for a in assignments]

    def _created(self, topic: Topic, first: int) -> None:
        """New partitions start at epoch 0 with the leader they get now."""
        up = self._up()
        for index in range(first, len(topic.replicas)):
            self.leadership.settle(topic, index, up)

    def add_partitions(self, topic: Topic, replicas: list[list[int]]) -> None:
        have = len(topic.replicas)
        topic.replicas.extend(replicas)
        self.quorum.record()
        self._created(topic, have)
        log.info("topic %s now has %d partitions", topic.name, len(topic.replicas))
        self.save()

    def set_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        topic.configs = configs
        self.quorum.record()
        self.save()

    def set_client_metrics(self, name: str, configs: dict[str, str]) -> None:
        """Create, change or (no configs) delete a CLIENT_METRICS subscription."""
        self.client_metrics.set(name, configs)
        self.quorum.record()
        self.save()

    # -- persistence -----------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "cluster_id": self.cluster_id,
                "topics": [{"name": t.name, "id": str(t.topic_id), "replicas": t.replicas, "configs": t.configs,
                            **({"reassigning": {str(i): r.to_json() for i, r in sorted(t.reassigning.items())}}
                               if t.reassigning else {}),
                            "leadership": self.leadership.to_json(t)} for t in self.topics.values()],
                **({"scram_credentials": self.credentials.to_json()} if self.credentials else {}),
                **({"committed_offsets": self.offsets.to_json()} if self.offsets else {}),
                **({"acls": [a.to_json() for a in self.created_acls]} if self.created_acls else {}),
                **({"client_metrics": self.client_metrics.to_json()} if self.client_metrics else {}),
                **({"client_quotas": self.client_quotas.to_json()} if self.client_quotas else {}),
                **({"broker_configs": self.broker_configs.to_json()} if self.broker_configs else {})}

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != STATE_FORMAT:
                raise ValueError(f"unknown state format {data.get('format')!r}")
            self.cluster_id = str(data["cluster_id"])
            for t in data["topics"]:
                topic = self.topics[t["name"]] = Topic(str(t["name"]), uuid.UUID(t["id"]),
                                                       [[int(b) for b in p] for p in t["replicas"]],
                                                       {str(k): str(v) for k, v in t["configs"].items()},
                                                       {int(i): Reassignment.from_json(r)
                                                        for i, r in t.get("reassigning", {}).items()})
                self.leadership.load_json(topic, t.get("leadership", {}))  # absent: from before epochs
            self.credentials.load_json(data.get("scram_credentials", {}))
            self.offsets.load_json(data.get("committed_offsets", []))
            self.created_acls[:] = [Acl(**{str(k): str(v) for k, v in a.items()}) for a in data.get("acls", [])]
            self.client_metrics.load_json(data.get("client_metrics", {}))
            self.client_quotas.load_json(data.get("client_quotas", []))
            self.broker_configs.load_json(data.get("broker_configs", {}))
        except (OSError, ValueError, KeyError, TypeError, AdminError) as e:
            raise ValueError(f"cannot load broker state from {path}: {e}") from None
        log.info("loaded %d topics from %s", len(self.topics), path)

    @staticmethod
    def _remove_leftovers(path: Path) -> None:
        """Temporary files of saves a kill interrupted (save's ``.NAME.*.tmp``): never renamed, so never
        the state; nothing else removes them."""
        for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
            try:
                tmp.unlink()
                log.info("removed %s, left by an interrupted save", tmp)
            except OSError:
                pass

    def save(self) -> None:
        """Write the state file atomically: a temporary file in the same directory, fsync, rename."""
        if self.state_file is None:
            return
        path = self.state_file
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.to_json(), f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
