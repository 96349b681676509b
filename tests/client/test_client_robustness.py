"""The client against a cluster that moves: controller changes, broker restarts, dropped connections,
retriable errors, and a cluster that stays away (issue 15 item 4). All against ``kcodec broker``'s
Cluster on 127.0.0.1, on the test's own event loop."""

from __future__ import annotations

import asyncio
import time

import pytest

from kcodec_broker import Cluster
from kcodec_broker.faults import DROP
from kcodec.client import (CallTimeoutError, Client, KafkaConnectionError, NewTopic, RequestTimeoutError,
                           SyncClient)
from kcodec.client.errors import RetriableTopics
from kcodec.client.retry import Backoff, Deadline, retriable
from kcodec.errors import ErrorCode
from kcodec.messages import MetadataRequest, MetadataResponse

from client_support import Call, FakeBroker, run

FAST = dict(retry_backoff=0.02, retry_backoff_max=0.2)  # short pauses keep the tests quick


def _created(cluster: Cluster) -> set[str]:
    return {n for n in cluster.topics() if not n.startswith("__")}


def test_a_controller_move_answers_not_controller_then_the_client_follows_it():
    async def main():
        async with Cluster(brokers=3, forward_admin=False) as cluster:
            async with Client(cluster.bootstrap, **FAST) as c:
                assert c.cluster.controller == 1
                assert (await c.create_topics(["before"]))[0].ok
                for new in (2, 3):
                    cluster.move_controller(new)  # the client still believes in the old controller
                    created = await c.create_topics([NewTopic(f"after-{new}", 2, 1)], timeout=5)
                    assert created[0].ok, created
                    assert c.cluster.controller == new
                assert [r.error for r in await c.delete_topics(["before"], timeout=5)] == [ErrorCode.NONE]
                # each move cost one CreateTopics answered NOT_CONTROLLER by the old controller
                assert c.requests_sent[("CreateTopics", 7)] == 1 + 2 * 2
            assert _created(cluster) == {"after-2", "after-3"}
    run(main())


def test_a_not_controller_answer_is_retried_within_the_deadline():
    async def main():
        async with Cluster(brokers=2) as cluster:
            async with Client(cluster.bootstrap, **FAST) as c:
                once = cluster.fail_next("CreateTopics", ErrorCode.NOT_CONTROLLER)
                assert (await c.create_topics(["t"], timeout=5))[0].ok
                assert once.taken == 1
                cluster.fail_next(37, ErrorCode.NOT_LEADER_OR_FOLLOWER, times=2)
                assert [r.ok for r in await c.create_partitions({"t": 3}, timeout=5)] == [True]
                assert len(cluster.topics()["t"].replicas) == 3
    run(main())


def test_only_the_topics_that_failed_are_sent_again():
    async def main():
        async with Cluster() as cluster:
            sent: list[list[str]] = []

            def first_topic_not_controller(node, req, version):
                sent.append([t.name for t in req.topics])
                if len(sent) == 1:  # the first request: "a" fails retriably, "b" for good
                    from kcodec.messages import CreateTopicsResponse as R
                    return R(topics=[R.CreatableTopicResult(name="a", error_code=ErrorCode.NOT_CONTROLLER),
                                     R.CreatableTopicResult(name="b", error_code=ErrorCode.INVALID_CONFIG)])
                return None

            cluster.intercept("CreateTopics", first_topic_not_controller)
            async with Client(cluster.bootstrap, **FAST) as c:
                a, b = await c.create_topics(["a", "b"], timeout=5)
            assert sent == [["a", "b"], ["a"]]
            assert a.ok and b.error == ErrorCode.INVALID_CONFIG
    run(main())


def test_topics_still_failing_at_the_deadline_keep_their_error():
    async def main():
        async with Cluster() as cluster:
            stuck = cluster.fail_next("DeleteTopics", ErrorCode.NOT_CONTROLLER, times=10_000)
            async with Client(cluster.bootstrap, **FAST) as c:
                await c.create_topics(["x"])
                [result] = await c.delete_topics(["x"], timeout=0.5)
            assert result.error == ErrorCode.NOT_CONTROLLER and stuck.taken > 1
    run(main())


def test_a_dropped_connection_is_reopened_and_the_call_retried():
    async def main():
        async with Cluster() as cluster:
            drop = cluster.drop_next("CreateTopics")
            async with Client(cluster.bootstrap, **FAST) as c:
                assert (await c.create_topics(["t"], timeout=5))[0].ok
                assert drop.taken == 1
                assert [conn.closed for conn in c.cluster.connections()] == [False]
    run(main())


def test_broker_restarts_during_topic_changes():
    async def main():
        async with Cluster(brokers=3, forward_admin=False) as cluster:
            ports = dict((s.node_id, s.port) for s in cluster.servers)
            async with Client(cluster.bootstrap, **FAST) as c:
                await c.create_topics(["t0"])
                await cluster.stop_broker_async(1)  # the controller: broker 2 takes over
                assert cluster.controller_id == 2
                assert (await c.create_topics(["t1"], timeout=5))[0].ok
                assert c.cluster.controller == 2 and 1 not in c.cluster.nodes
                await cluster.start_broker_async(1)
                assert cluster.server(1).port == ports[1]  # back on its own port
                assert cluster.controller_id == 2  # and not the controller again until moved
                cluster.move_controller(1)
                assert (await c.delete_topics(["t0"], timeout=5))[0].ok
                assert c.cluster.controller == 1

                # a single broker down while the call runs: the call waits for it within its deadline
                for node in (2, 3):
                    await cluster.stop_broker_async(node)
                await cluster.stop_broker_async(1)
                call = asyncio.ensure_future(c.create_topics(["t2"], timeout=10))
                await asyncio.sleep(0.5)
                assert not call.done()
                await cluster.start_broker_async(1)
                assert (await call)[0].ok
            assert _created(cluster) == {"t1", "t2"}
    run(main())


def test_many_calls_at_once_ride_out_a_restart_together():
    async def main():
        async with Cluster(brokers=2, forward_admin=False) as cluster:
            async with Client(cluster.bootstrap, **FAST) as c:
                await cluster.stop_broker_async(1)  # the controller: calls must find broker 2
                calls = [asyncio.ensure_future(c.create_topics([f"c{i}"], timeout=10)) for i in range(20)]
                await asyncio.sleep(0.1)
                await cluster.start_broker_async(1)
                cluster.move_controller(1)  # and move back while some are still retrying
                results = [r for rs in await asyncio.gather(*calls) for r in rs]
                assert [r.error for r in results] == [ErrorCode.NONE] * 20
                assert len({id(conn) for conn in c.cluster.connections()}) <= 2  # one per broker
            assert _created(cluster) == {f"c{i}" for i in range(20)}
    run(main())


def test_a_cluster_that_stays_away_fails_with_the_call_timeout():
    async def main():
        async with Cluster() as cluster:
            async with Client(cluster.bootstrap, **FAST) as c:
                await cluster.stop_broker_async(1)
                started = time.monotonic()
                with pytest.raises(CallTimeoutError) as e:
                    await c.create_topics(["t"], timeout=1.0)
                elapsed = time.monotonic() - started
            err = e.value
            assert isinstance(err, TimeoutError) and err.timeout == 1.0 and err.attempts > 1
            assert isinstance(err.last, KafkaConnectionError)
            assert str(err).startswith("CreateTopics: no result within its 1s deadline after")
            assert elapsed < 5  # bounded by the deadline, not by connect or request timeouts
    run(main())


def test_a_broker_that_never_answers_fails_within_the_deadline():
    async def main():
        async with Cluster() as cluster:
            hang = asyncio.Event()
            cluster.intercept("ListTopics", lambda node, req, v: DROP if hang.is_set() else None)
            async with Client(cluster.bootstrap, request_timeout=30, **FAST) as c:
                await c.list_topics()
                hang.set()
                with pytest.raises(CallTimeoutError, match="ListTopics"):
                    await c.list_topics(timeout=0.5)
    run(main())


def test_requests_without_an_answer_are_sent_again_on_a_new_connection_until_the_deadline():
    async def main():
        async with FakeBroker({3: (0, 12)}) as fake:
            def metadata(call: Call):  # brokers-only Metadata is answered, all-topics never
                if call.body(MetadataRequest).topics is None:
                    return None
                return MetadataResponse(brokers=[MetadataResponse.Broker(node_id=1, host="127.0.0.1",
                                                                         port=fake.port)])

            fake.handlers[3] = metadata
            async with Client(fake.address, request_timeout=0.2, **FAST) as c:
                with pytest.raises(CallTimeoutError) as e:
                    await c.list_topics(timeout=1.0)
            last = e.value.last
            # the deadline may also end the last attempt while it reconnects (a loaded machine): that one sent nothing
            cut_reconnecting = isinstance(last, KafkaConnectionError) and "within the call's deadline" in str(last)
            assert isinstance(last, RequestTimeoutError) or cut_reconnecting, repr(last)
            sent = e.value.attempts - cut_reconnecting
            assert sent >= 2
            unanswered = [call for call in fake.calls
                          if call.api_key == 3 and call.body(MetadataRequest).topics is None]
            assert len(unanswered) == sent
            # each timed-out attempt closes its connection (it may be half-open): the next reconnects
            assert fake.connections >= sent - 1 and fake.connections >= 2
    run(main())


def test_an_address_that_failed_waits_out_its_reconnect_backoff_behind_the_others():
    async def main():
        dead = FakeBroker({3: (0, 12)})
        async with dead:
            dead_port = dead.port  # nothing listens there any more
        async with Cluster() as cluster:
            live = cluster.bootstrap
            client = Client(f"127.0.0.1:{dead_port},{live}", retry_backoff=0.5, retry_backoff_max=5)
            opened: list[int] = []
            real_open = client.cluster._open

            async def recording(host, port, connect_timeout):
                opened.append(port)
                return await real_open(host, port, connect_timeout)

            client.cluster._open = recording
            port = cluster.server(1).port
            async with client:
                assert opened == [dead_port, port]

                async def forget_and_refresh() -> None:  # only the bootstrap list left, in its order
                    await client.cluster.close()
                    client.cluster.nodes = {}
                    await client.cluster.refresh(Deadline(5, "refresh"))

                await forget_and_refresh()
                # the dead address is within its backoff (0.4-0.6 s): the live one is asked first
                assert opened[2:] == [port]
                await asyncio.sleep(0.7)
                await forget_and_refresh()  # backoff over: the bootstrap order again
                assert opened[3:] == [dead_port, port]
                await forget_and_refresh()  # failed twice in a row: 0.8-1.2 s this time
                assert opened[5:] == [port]
    run(main())


def test_metadata_is_refreshed_on_a_timer():
    async def main():
        async with Cluster(brokers=2) as cluster:
            async with Client(cluster.bootstrap, metadata_max_age=0.1) as c:
                first = c.cluster.refreshes
                cluster.move_controller(2)
                for _ in range(100):  # no call made: only the timer can notice
                    if c.cluster.controller == 2:
                        break
                    await asyncio.sleep(0.05)
                assert c.cluster.controller == 2 and c.cluster.refreshes > first
    run(main())


def test_the_sync_cluster_restarts_brokers_on_their_ports():
    with Cluster(brokers=2) as cluster:
        port = cluster.server(2).port
        with SyncClient(cluster.bootstrap, **FAST) as c:
            cluster.stop_broker(2)
            assert [d.name for d in c.describe_topics(timeout=5) if not d.internal] == []
            cluster.restart_broker(2, down=0.1)
            cluster.move_controller(2)
            assert c.create_topics(["s"], timeout=5)[0].ok
        assert cluster.server(2).port == port


def test_an_async_cluster_refuses_the_blocking_topology_calls():
    async def main():
        async with Cluster(brokers=2) as cluster:
            with pytest.raises(RuntimeError, match="await the \\*_async method"):
                cluster.stop_broker(1)
            with pytest.raises(ValueError, match="no broker 7"):
                cluster.move_controller(7)
            await cluster.stop_broker_async(1)
            with pytest.raises(ValueError, match="broker 1 is stopped"):
                cluster.move_controller(1)
            with pytest.raises(ValueError, match="unknown API"):
                cluster.fail_next("NoSuchApi", ErrorCode.NOT_CONTROLLER)
    run(main())


def test_backoff_doubles_up_to_its_cap_with_bounded_jitter():
    plain = Backoff(0.1, 1.0, jitter=0.2, rand=lambda: 0.5)
    assert [round(plain.delay(i), 3) for i in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    low, high = Backoff(0.1, 1.0, rand=lambda: 0.0), Backoff(0.1, 1.0, rand=lambda: 0.999999)
    assert low.delay(10) == pytest.approx(0.8) and high.delay(10) == pytest.approx(1.2, abs=1e-5)
    assert Backoff().delay(10_000) <= 2.0 * 1.2  # no overflow, still bounded
    with pytest.raises(ValueError):
        Backoff(0.5, 0.1)


def test_which_errors_are_retried():
    assert retriable(ErrorCode.NOT_CONTROLLER) and retriable(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert retriable(ErrorCode.LEADER_NOT_AVAILABLE) and retriable(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    # retriable for Kafka, but an answer to an admin call
    assert not retriable(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) and not retriable(ErrorCode.REQUEST_TIMED_OUT)
    assert not retriable(ErrorCode.TOPIC_ALREADY_EXISTS) and not retriable(ErrorCode.INVALID_CONFIG)
    err = RetriableTopics("CreateTopics", {f"t{i}": ErrorCode.NOT_CONTROLLER for i in range(7)})
    assert str(err) == ("CreateTopics: retriable errors: t0 NOT_CONTROLLER, t1 NOT_CONTROLLER, "
                        "t2 NOT_CONTROLLER, t3 NOT_CONTROLLER, t4 NOT_CONTROLLER and 2 more")


def test_bad_timeouts_are_refused():
    with pytest.raises(ValueError, match="timeout must be positive"):
        Client("127.0.0.1:1", timeout=0)
    with pytest.raises(ValueError, match="metadata_max_age"):
        Client("127.0.0.1:1", metadata_max_age=0)

    async def main():
        with pytest.raises(ValueError, match="list: the timeout must be positive"):
            Deadline(-1, "list")
    run(main())
