"""DescribeLogDirs (KIP-113): each broker answers for its one log directory and the partitions it holds a
replica of, with their sizes (kafka-log-dirs.sh, admin clients' describe_log_dirs)."""

from __future__ import annotations

import shutil
from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import DescribeLogDirsRequest, DescribeLogDirsResponse

from ..context import Context
from . import handles

MEMORY_LOG_DIR = "memory"  # the log directory a broker without a state file names: its data is in memory


@handles(DescribeLogDirsRequest, DescribeLogDirsResponse)
def describe_log_dirs(ctx: Context, req: Any) -> DescribeLogDirsResponse:
    resp = DescribeLogDirsResponse()
    if not ctx.allowed("Describe", "cluster"):  # as Kafka: no results (v3+ say why)
        resp.error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return resp
    # null names every partition; a list, only those of its topics and partitions that this broker holds
    wanted: Optional[dict[str, set[int]]] = None
    if req.topics is not None:
        wanted = {}
        for t in req.topics:
            wanted.setdefault(t.topic, set()).update(t.partitions)
    state, node = ctx.state, ctx.node_id
    topics = []
    for topic in sorted(state.topics.values(), key=lambda t: t.name):
        if wanted is not None and topic.name not in wanted:
            continue
        partitions = []
        for index, replicas in enumerate(topic.replicas):
            if node not in replicas or (wanted is not None and index not in wanted[topic.name]):
                continue
            plog = state.logs.logs.get((topic.topic_id, index))
            partitions.append(DescribeLogDirsResponse.DescribeLogDirsPartition(
                partition_index=index, partition_size=plog.size if plog is not None else 0,
                offset_lag=0, is_future_key=False))  # replicas share one log here: none lags, none moves
        if partitions:
            topics.append(DescribeLogDirsResponse.DescribeLogDirsTopic(name=topic.name, partitions=partitions))
    result = DescribeLogDirsResponse.DescribeLogDirsResult(error_code=ErrorCode.NONE, log_dir=MEMORY_LOG_DIR,
                                                           topics=topics)
    data_file = state.data_file
    if data_file is not None:
        result.log_dir = str(data_file.parent)
        usage = shutil.disk_usage(data_file.parent)
        result.total_bytes, result.usable_bytes = usage.total, usage.free
    resp.results = [result]
    return resp
