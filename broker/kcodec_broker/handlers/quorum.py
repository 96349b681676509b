"""DescribeQuorum v0-2 (KIP-595; v1: fetch times, KIP-836; v2: directory ids and nodes, KIP-853).

Any broker forwards it to the controller, which checks Describe on the cluster (else
CLUSTER_AUTHORIZATION_FAILED at the top level) and then, as KafkaRaftClient does, that the request names
exactly one topic, ``__cluster_metadata``, with exactly partition 0: otherwise every partition it names
gets UNKNOWN_TOPIC_OR_PARTITION. Kafka sets no error message anywhere, so v2's messages are the
generated default, an empty string. The quorum itself is ../quorum.py.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import DescribeQuorumRequest, DescribeQuorumResponse

from ..context import Context
from . import handles

METADATA_TOPIC = "__cluster_metadata"
NO_DIRECTORY_ID = uuid.UUID(int=0)  # a static quorum (kraft.version 0) has no directory ids
_Resp = DescribeQuorumResponse


def _names_the_metadata_partition(req: Any) -> bool:
    topics = req.topics or []
    return (len(topics) == 1 and topics[0].topic_name == METADATA_TOPIC and len(topics[0].partitions) == 1
            and topics[0].partitions[0].partition_index == 0)


def _partition_errors(req: Any, code: int) -> list[Any]:
    return [_Resp.TopicData(topic_name=t.topic_name, partitions=[
        _Resp.PartitionData(partition_index=p.partition_index, error_code=code)
        for p in t.partitions]) for t in req.topics or []]


@handles(DescribeQuorumRequest, DescribeQuorumResponse)
def describe_quorum(ctx: Context, req: Any) -> DescribeQuorumResponse:
    if not ctx.allowed("Describe", "cluster"):
        return _Resp(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if not _names_the_metadata_partition(req):
        return _Resp(topics=_partition_errors(req, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    state, quorum = ctx.state, ctx.state.quorum
    now = int(time.time() * 1000)
    voters = [quorum.voter(node, now) for node in state.broker_ids]
    partition = _Resp.PartitionData(
        partition_index=0, error_code=ErrorCode.NONE, leader_id=state.controller_id,
        leader_epoch=quorum.epoch, high_watermark=quorum.end_offset, observers=[],
        current_voters=[_Resp.ReplicaState(replica_id=v.node_id, replica_directory_id=NO_DIRECTORY_ID,
                                           log_end_offset=v.log_end_offset, last_fetch_timestamp=v.last_fetch_ms,
                                           last_caught_up_timestamp=v.last_caught_up_ms) for v in voters])
    resp = _Resp(topics=[_Resp.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])])
    if ctx.version >= 2:  # each voter's endpoints, as it last advertised them
        resp.nodes = [_Resp.Node(node_id=node, listeners=[
            _Resp.Listener(name=name, host=host, port=port)
            for name, (host, port) in sorted(quorum.endpoints.get(node, {}).items())])
            for node in state.broker_ids]
    return resp
