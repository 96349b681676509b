"""Request interceptors: a test makes a broker answer differently, or hang up, for chosen requests.

franz-go's kfake is the model: an interceptor sees each decoded request before its handler and
either answers it (a response object), closes the connection (``DROP``), or lets it through (None).
``Cluster.intercept`` / ``fail_next`` / ``drop_next`` are the public way in.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

from kcodec import definitions

from .unsupported import error_response

DROP = object()  # an interceptor's answer: close the connection without a response

# fn(node_id, request, version) -> a response, DROP, or None (answer normally)
InterceptFn = Callable[[int, Any, int], Any]


@dataclass
class Interceptor:
    api_key: int
    fn: InterceptFn
    node: Optional[int] = None    # None: every broker
    times: Optional[int] = None   # how many requests it may still take; None: until removed
    taken: int = 0                # how many it answered or dropped so far


class Interceptors:
    """The cluster's interceptors, first added first asked; thread-safe (tests run in another thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[Interceptor] = []

    def add(self, item: Interceptor) -> Interceptor:
        with self._lock:
            self._items.append(item)
        return item

    def remove(self, item: Interceptor) -> None:
        with self._lock:
            if item in self._items:
                self._items.remove(item)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __bool__(self) -> bool:
        return bool(self._items)

    def answer(self, node_id: int, api_key: int, version: int, request: Any) -> Any:
        """The first interceptor's answer for this request (a response or DROP), or None."""
        with self._lock:
            candidates = [i for i in self._items if i.api_key == api_key and i.node in (None, node_id)]
        for item in candidates:
            out = item.fn(node_id, request, version)
            if out is None:
                continue
            with self._lock:
                item.taken += 1
                if item.times is not None:
                    item.times -= 1
                    if item.times <= 0 and item in self._items:
                        self._items.remove(item)
            return out
        return None


def api_key_of(api: int | str) -> int:
    """An api key from a key or a name ("CreateTopics")."""
    if isinstance(api, int):
        return api
    for key, name in definitions.api_keys().items():
        if name == api:
            return key
    raise ValueError(f"unknown API {api!r}")


def failing(api_key: int, code: int) -> InterceptFn:
    """An interceptor function answering every request with ``code`` wherever its response has one."""
    def fn(node_id: int, request: Any, version: int) -> Any:
        resp = error_response(api_key, version, request, code)
        if resp is None:
            raise ValueError(f"api key {api_key}: its response has no error code to carry {code}")
        return resp
    return fn


def dropping(node_id: int, request: Any, version: int) -> Any:
    return DROP
