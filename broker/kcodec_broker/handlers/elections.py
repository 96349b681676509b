"""ElectLeaders v0-2: preferred leader elections (KIP-183) and, from v1, unclean ones (KIP-460).

Answered as KRaft's controller answers (any broker forwards it there): Alter on the cluster first; a
named partition gets a result each, ELECTION_NOT_NEEDED included; a null list elects wherever needed
and leaves out the partitions that needed no election. With ``forward_admin=False`` a broker other
than the controller answers NOT_CONTROLLER for each partition, as ZooKeeper-era Kafka did.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import ElectLeadersRequest, ElectLeadersResponse

from ..context import Context
from . import handles

log = logging.getLogger("kcodec_broker")

PREFERRED, UNCLEAN = 0, 1
# Kafka's messages for the errors it builds from the code alone (ApiError(Errors))
_MESSAGES = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
}
_Resp = ElectLeadersResponse
Requested = list[tuple[str, Iterable[int]]]


def _result(index: int, code: int, message: Optional[str]) -> Any:
    return _Resp.PartitionResult(partition_id=index, error_code=code, error_message=message)


def _all_answered(requested: Requested, code: ErrorCode, message: Optional[str]) -> list[Any]:
    """Every requested partition with one error (Kafka's getErrorResponse)."""
    return [_Resp.ReplicaElectionResult(topic=name, partition_result=[_result(p, code, message) for p in parts])
            for name, parts in requested]


def _elect(ctx: Context, name: str, index: int, unclean: bool) -> Any:
    topic = ctx.state.topics.get(name)
    if topic is None:
        return _result(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {name}")
    if not 0 <= index < len(topic.replicas):
        return _result(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {name}-{index}")
    code = ctx.state.elect_leader(topic, index, unclean)
    if code == ErrorCode.NONE:
        log.info("%s election: broker %d leads %s-%d", "unclean" if unclean else "preferred",
                 ctx.state.leader(topic, index), name, index)
    return _result(index, code, _MESSAGES.get(code))


@handles(ElectLeadersRequest, ElectLeadersResponse)
def elect_leaders(ctx: Context, req: Any) -> ElectLeadersResponse:
    named: Requested = [(t.topic, t.partitions) for t in req.topic_partitions or ()]
    if not ctx.allowed("Alter", "cluster"):  # a null list: no partitions to answer for
        return _Resp(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED if ctx.version >= 1 else 0,
                     replica_election_results=_all_answered(named, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                            "Cluster authorization failed."))
    election_type = req.election_type if ctx.version >= 1 else PREFERRED
    if election_type not in (PREFERRED, UNCLEAN):
        return _Resp(error_code=ErrorCode.INVALID_REQUEST, replica_election_results=_all_answered(
            named, ErrorCode.INVALID_REQUEST, f"Unknown election type {election_type}"))
    everything = req.topic_partitions is None
    requested: Requested = named if not everything else [
        (name, range(len(topic.replicas))) for name, topic in sorted(ctx.state.topics.items())]
    if not ctx.runtime.forward_admin and ctx.node_id != ctx.state.controller_id:
        return _Resp(replica_election_results=_all_answered(requested, ErrorCode.NOT_CONTROLLER, None))
    results = []
    for name, parts in requested:
        elected = [_elect(ctx, name, index, election_type == UNCLEAN) for index in parts]
        if everything:
            elected = [r for r in elected if r.error_code != ErrorCode.ELECTION_NOT_NEEDED]
        results.append(_Resp.ReplicaElectionResult(topic=name, partition_result=elected))
    return _Resp(replica_election_results=results)
