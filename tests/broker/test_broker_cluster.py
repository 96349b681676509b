"""The Python API: Cluster as a sync and an async context manager, its addresses and records."""

from __future__ import annotations

import asyncio

import pytest
from broker_wire import Wire

import kcodec
from kcodec_broker import Cluster
from kcodec.messages import ApiVersionsRequest, ListTopicsRequest, ListTopicsResponse


def test_async_context_manager_on_the_callers_loop():
    async def main() -> list[str]:
        async with Cluster(brokers=2, system_topic_partitions=1) as c:
            assert len(c.bootstrap.split(",")) == 2
            c.create_topic("a", 1, 2)
            host, port = c.addresses[1]
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(kcodec.encode_request(ListTopicsRequest(), 1, correlation_id=9, client_id="async"))
            size = int.from_bytes(await reader.readexactly(4), "big")
            _, resp = kcodec.decode_response(size.to_bytes(4, "big") + await reader.readexactly(size),
                                             ListTopicsResponse.API_KEY, 1)
            writer.close()
            assert c.api_versions_used() == {"async": {"ListTopics": [1]}}
            return [t.name for t in resp.topics]

    assert asyncio.run(asyncio.wait_for(main(), 30)) == ["a"]


def test_sync_cluster_stops_and_frees_its_ports():
    with Cluster(brokers=3, system_topic_partitions=1) as c:
        addresses = c.addresses
        assert len(set(addresses)) == 3 and c.bootstrap == ",".join(f"{h}:{p}" for h, p in addresses)
        with Wire(addresses[2]) as w:
            assert w.call(ApiVersionsRequest(), 0).error_code == 0
        with pytest.raises(RuntimeError):
            c.start()
    with pytest.raises(ConnectionRefusedError):
        Wire(addresses[0], timeout=2)


def test_bad_options_are_refused():
    with pytest.raises(ValueError):
        Cluster(brokers=0)
    with pytest.raises(ValueError):
        Cluster(num_partitions=0)
    with pytest.raises(ValueError):
        Cluster(acls=["nobody:Fly:cluster"])


def test_a_fixed_port_and_the_ones_after_it():
    import socket

    for _ in range(5):  # another process may take a port between the probe and the bind: try again
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        base = probe.getsockname()[1]
        probe.close()
        if base > 65000:
            continue
        try:
            with Cluster(brokers=3, port=base, system_topic_partitions=1) as c:
                assert [p for _, p in c.addresses] == [base, base + 1, base + 2]
                return
        except OSError:
            continue
    pytest.skip("no three consecutive free ports found")  # allowed in CI: tests/needs.py CI_ALLOWED_SKIPS


def test_stop_closes_connections_clients_keep_open():
    import time

    with Cluster(brokers=2, system_topic_partitions=1) as c:
        lingering = [Wire(a) for a in c.addresses]
        lingering[0].call(ApiVersionsRequest(), 1)
        started = time.monotonic()
    assert time.monotonic() - started < 5
    assert all(w.closed_by_peer() for w in lingering)
    for w in lingering:
        w.close()
