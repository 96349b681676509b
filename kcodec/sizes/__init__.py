"""Response sizes of a Kafka cluster's metadata: Metadata (every version) against ListTopics (KIP-142) and
DescribeTopicPartitions (KIP-966, paged), exact to the byte, from 10 to 100,000 topics.

    from kcodec.sizes import SyntheticCluster, measure
    sizes = measure(SyntheticCluster(topic_count=10_000, partitions=10, replication_factor=3, broker_count=6))
    sizes.metadata[12], sizes.list_topics[0], sizes.dtp_pages, sizes.dtp_bytes
"""

from __future__ import annotations

from .build import (DEFAULT_PARTITION_LIMIT, dtp_pages, dtp_request, dtp_response, list_topics_response,
                    metadata_request, metadata_response)
from .measure import Sizes, Tally, array_size, measure
from .model import Broker, Cluster, Dist, ListedCluster, Partition, SyntheticCluster, Topic

__all__ = [
    "DEFAULT_PARTITION_LIMIT", "Broker", "Cluster", "Dist", "ListedCluster", "Partition", "Sizes",
    "SyntheticCluster", "Tally", "Topic", "array_size", "dtp_pages", "dtp_request", "dtp_response",
    "list_topics_response", "measure", "metadata_request", "metadata_response",
]
