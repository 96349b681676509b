"""A blocking wrapper: the asyncio client on a private event loop, for scripts and the CLI."""

from __future__ import annotations

import asyncio
from typing import Any, Iterable, Mapping, Optional, Sequence, TypeVar, Union

from .admin import Client
from .results import (ClusterDescription, CreateTopicResult, NewTopic, TopicConfigs, TopicDescription, TopicListing,
                      TopicResult)

T = TypeVar("T")


class SyncClient:
    """``with SyncClient("127.0.0.1:9092") as c: c.list_topics()``; the same options as ``Client``."""

    def __init__(self, bootstrap: Union[str, Sequence[str]], **options: Any) -> None:
        self.client = Client(bootstrap, **options)  # first: bad options must not leak a loop
        self._loop = asyncio.new_event_loop()

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def __enter__(self) -> SyncClient:
        try:
            self._run(self.client.connect())
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if not self._loop.is_closed():
            self._run(self.client.close())
            self._loop.close()

    def negotiated(self, **kw: Any) -> dict[str, Optional[int]]:
        return self._run(self.client.negotiated(**kw))  # type: ignore[no-any-return]

    def describe_cluster(self, **kw: Any) -> ClusterDescription:
        return self._run(self.client.describe_cluster(**kw))  # type: ignore[no-any-return]

    def list_topics(self, internal: bool = False, **kw: Any) -> list[TopicListing]:
        return self._run(self.client.list_topics(internal, **kw))  # type: ignore[no-any-return]

    def describe_topics(self, names: Optional[Iterable[str]] = None, **kw: Any) -> list[TopicDescription]:
        return self._run(self.client.describe_topics(names, **kw))  # type: ignore[no-any-return]

    def create_topics(self, topics: Iterable[Union[NewTopic, str]], **kw: Any) -> list[CreateTopicResult]:
        return self._run(self.client.create_topics(topics, **kw))  # type: ignore[no-any-return]

    def delete_topics(self, names: Iterable[str], **kw: Any) -> list[TopicResult]:
        return self._run(self.client.delete_topics(names, **kw))  # type: ignore[no-any-return]

    def create_partitions(self, counts: Mapping[str, int], **kw: Any) -> list[TopicResult]:
        return self._run(self.client.create_partitions(counts, **kw))  # type: ignore[no-any-return]

    def describe_configs(self, names: Iterable[str], keys: Optional[Sequence[str]] = None,
                         **kw: Any) -> list[TopicConfigs]:
        return self._run(self.client.describe_configs(names, keys, **kw))  # type: ignore[no-any-return]
