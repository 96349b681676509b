"""The connection layer against a scripted fake broker: negotiation, SASL, pipelining, timeouts, garbage."""

from __future__ import annotations

import asyncio
import struct

import pytest

import kcodec
from kcodec.client import (AuthenticationError, Client, ClientError, Connection, KafkaConnectionError, ProtocolError,
                           RequestTimeoutError)
from kcodec.messages import (ApiVersionsResponse, MetadataRequest, MetadataResponse, SaslAuthenticateRequest,
                             SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse)

from client_support import Call, FakeBroker, run

APIS = {3: (0, 12), 17: (0, 1), 36: (0, 2)}


def meta(call: Call, **kw) -> MetadataResponse:
    return MetadataResponse(brokers=[MetadataResponse.Broker(node_id=1, host="127.0.0.1", port=1)], **kw)


async def connect(fake: FakeBroker, **kw) -> Connection:
    return await Connection.open("127.0.0.1", fake.port, **kw)


# -- ApiVersions ---------------------------------------------------------------------------------

def test_negotiates_the_highest_common_version():
    async def main():
        async with FakeBroker({3: (1, 7), 19: (0, 99), 2001: (0, 5)}) as fake:
            conn = await connect(fake)
            try:
                assert conn.versions.api_version == 4
                assert conn.versions.pick(MetadataRequest) == 7  # the broker's max
                from kcodec.messages import CreateTopicsRequest, ListTopicsRequest
                assert conn.versions.pick(CreateTopicsRequest) == CreateTopicsRequest.VALID_VERSIONS[1]  # ours
                assert conn.versions.pick(ListTopicsRequest) is None  # not under its default key
                assert conn.versions.pick(ListTopicsRequest, 2001) == 1
            finally:
                await conn.close()
            assert fake.versions_of(18) == [4]
    run(main())


def test_no_common_version_is_a_clear_error():
    async def main():
        async with FakeBroker({3: (20, 30)}) as fake:
            client = Client(fake.address)
            try:
                from kcodec.client import UnsupportedApiError
                with pytest.raises(UnsupportedApiError, match=r"Metadata \(api key 3\): broker speaks v20-v30, kcodec v0-v13"):
                    await client.connect()
            finally:
                await client.close()
    run(main())


def test_unsupported_apiversions_version_falls_back_to_the_brokers_highest():
    # Kafka's answer to an ApiVersions version it lacks: v0 layout, error 35, its own range for key 18.
    async def main():
        async with FakeBroker({**APIS, 18: (0, 2)}) as fake:
            conn = await connect(fake)
            await conn.close()
            assert fake.versions_of(18) == [4, 2]
            assert conn.versions.api_version == 2 and conn.versions.broker[3] == (0, 12)
    run(main())


def test_error_without_a_range_falls_back_to_v0_then_uses_what_v0_reveals():
    # librdkafka's mock answers with an empty list; Kafka's client then asks at v0.
    async def main():
        async with FakeBroker({**APIS, 18: (0, 2)}) as fake:
            def answer(call: Call):
                if call.version > 2:
                    return kcodec.encode_response(ApiVersionsResponse(error_code=35), 0, call.header.correlation_id)
                return fake.api_versions(call)
            fake.handlers[18] = answer
            conn = await connect(fake)
            await conn.close()
            assert fake.versions_of(18) == [4, 0, 2]
            assert conn.versions.api_version == 2
    run(main())


def test_version_caps_apply():
    async def main():
        async with FakeBroker(APIS) as fake:
            conn = await connect(fake, max_versions={18: 1, 3: 5})
            await conn.close()
            assert fake.versions_of(18) == [1] and conn.versions.pick(MetadataRequest) == 5
    run(main())


# -- SASL PLAIN ----------------------------------------------------------------------------------

def sasl_fake(password: str = "secret", mechanisms=("PLAIN",), apis=APIS) -> FakeBroker:
    def handshake(call: Call):
        mech = call.body(SaslHandshakeRequest).mechanism
        return SaslHandshakeResponse(error_code=0 if mech in mechanisms else 33, mechanisms=list(mechanisms))

    def authenticate(call: Call):
        token = call.body(SaslAuthenticateRequest).auth_bytes
        if token == b"\0alice\0" + password.encode():
            return SaslAuthenticateResponse()
        return SaslAuthenticateResponse(error_code=58, error_message="Authentication failed: Invalid username or password")

    return FakeBroker(apis, {17: handshake, 36: authenticate, 3: meta})


def test_sasl_plain_success():
    async def main():
        async with sasl_fake() as fake:
            conn = await connect(fake, sasl=("alice", "secret"))
            await conn.request(MetadataRequest(topics=[]))
            await conn.close()
            assert [c.api_key for c in fake.calls] == [18, 17, 36, 3]
            assert fake.versions_of(17) == [1] and fake.versions_of(36) == [2]
    run(main())


@pytest.mark.parametrize("case, match", [
    ("password", r"SASL_AUTHENTICATION_FAILED: Authentication failed: Invalid username"),
    ("mechanism", r"PLAIN refused \(UNSUPPORTED_SASL_MECHANISM\); enabled: SCRAM-SHA-512"),
    ("hangup", r"SASL PLAIN as 'alice': .* closed the connection"),
    ("no-sasl", r"does not offer SASL"),
])  # handshake v0's bare tokens: tests/client/test_client_sasl.py, against kcodec broker
def test_sasl_failures_are_authentication_errors(case, match):
    async def main():
        fake = sasl_fake(
            mechanisms=("SCRAM-SHA-512",) if case == "mechanism" else ("PLAIN",),
            apis={3: (0, 12)} if case == "no-sasl" else APIS)
        if case == "hangup":
            del fake.handlers[36]  # the fake hangs up on requests it has no handler for
        async with fake:
            with pytest.raises(AuthenticationError, match=match):
                await connect(fake, sasl=("alice", "wrong" if case == "password" else "secret"))
            assert 3 not in [c.api_key for c in fake.calls]
    run(main())


# -- requests ------------------------------------------------------------------------------------

def test_pipelined_requests_answered_out_of_order():
    n = 8

    async def main():
        async with FakeBroker(APIS) as fake:
            arrived = asyncio.Event()

            async def slow_meta(call: Call):
                if len(fake.versions_of(3)) == n:
                    arrived.set()
                await asyncio.wait_for(arrived.wait(), 5)  # every request is in flight before any answer
                index = int(call.body(MetadataRequest).topics[0].name)
                await asyncio.sleep(0.01 * (n - index))    # answer in reverse order
                return meta(call, topics=[MetadataResponse.Topic(name=str(index))])

            fake.handlers[3] = slow_meta
            conn = await connect(fake)
            try:
                reqs = [conn.request(MetadataRequest(topics=[MetadataRequest.Topic(name=str(i))])) for i in range(n)]
                answers = await asyncio.gather(*reqs)
            finally:
                await conn.close()
            assert [a.topics[0].name for a in answers] == [str(i) for i in range(n)]
            assert fake.connections == 1
    run(main())


def test_timeout_leaves_the_connection_usable_and_drops_the_late_answer():
    async def main():
        async with FakeBroker(APIS) as fake:
            async def late(call: Call):
                if call.body(MetadataRequest).topics[0].name == "slow":
                    await asyncio.sleep(0.5)
                return meta(call, topics=[MetadataResponse.Topic(name=call.body(MetadataRequest).topics[0].name)])

            fake.handlers[3] = late
            conn = await connect(fake)
            try:
                with pytest.raises(RequestTimeoutError, match=r"Metadata v12 to 127\.0\.0\.1:\d+: no response within 0\.1s"):
                    await conn.request(MetadataRequest(topics=[MetadataRequest.Topic(name="slow")]), timeout=0.1)
                await asyncio.sleep(0.6)  # the late answer arrives now and is dropped
                fast = await conn.request(MetadataRequest(topics=[MetadataRequest.Topic(name="fast")]))
                assert fast.topics[0].name == "fast" and not conn.closed
            finally:
                await conn.close()
    run(main())


def test_connection_refused_and_bootstrap_fallback():
    async def main():
        dead = FakeBroker(APIS)
        async with dead:
            dead_port = dead.port  # closed below: nothing listens there any more
        with pytest.raises(KafkaConnectionError, match=rf"127\.0\.0\.1:{dead_port}"):
            await Connection.open("127.0.0.1", dead_port, connect_timeout=2)
        async with FakeBroker(APIS, {3: meta}) as live:
            async with Client(f"127.0.0.1:{dead_port},{live.address}", connect_timeout=2) as client:
                assert [c.port for c in client.cluster.connections()] == [live.port]
    run(main())


def _frame(corr: int, body: bytes) -> bytes:
    return struct.pack(">ii", 4 + len(body), corr) + body


@pytest.mark.parametrize("garbage, match", [
    (lambda corr: b"\xff\xff\xff\xfe" + b"junk", r"bad frame: frame size -2 is outside"),
    (lambda corr: b"\x7f\x00\x00\x00", r"bad frame: frame size 2130706432 is outside"),
    (lambda corr: _frame(corr + 1000, b""), r"answered correlation id \d+, which no request has"),
    (lambda corr: b"\x00\x00", r"closed the connection"),  # a partial frame, then hang-up
])
def test_garbage_fails_pending_requests_and_closes(garbage, match):
    async def main():
        async with FakeBroker(APIS) as fake:
            async def bad(call: Call):
                if call.api_key == 3:
                    asyncio.get_running_loop().call_later(0.05, fake._writers[-1].close)
                return garbage(call.header.correlation_id)

            fake.handlers[3] = bad
            conn = await connect(fake)
            try:
                with pytest.raises((ProtocolError, KafkaConnectionError), match=match):
                    await conn.request(MetadataRequest(topics=[]), timeout=5)
                assert conn.closed
                with pytest.raises((ProtocolError, KafkaConnectionError)):
                    await conn.request(MetadataRequest(topics=[]))
            finally:
                await conn.close()
    run(main())


def test_undecodable_body_fails_only_its_request():
    async def main():
        async with FakeBroker(APIS) as fake:
            def half(call: Call):
                if call.body(MetadataRequest).topics[0].name == "bad":
                    return _frame(call.header.correlation_id, b"\x00\x00\x00\x05\x00")  # truncated body
                return meta(call)

            fake.handlers[3] = half
            conn = await connect(fake)
            try:
                with pytest.raises(ProtocolError, match=r"Metadata v12 response from .*: .* at byte"):
                    await conn.request(MetadataRequest(topics=[MetadataRequest.Topic(name="bad")]))
                ok = await conn.request(MetadataRequest(topics=[MetadataRequest.Topic(name="good")]))
                assert ok.brokers[0].node_id == 1
            finally:
                await conn.close()
    run(main())


def test_random_bytes_never_hang_or_crash():
    import random

    rng = random.Random(5)

    async def main():
        for _ in range(20):
            async with FakeBroker(APIS) as fake:
                blob = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 64)))
                fake.handlers[18] = lambda call, blob=blob: blob
                try:
                    conn = await Connection.open("127.0.0.1", fake.port, request_timeout=0.5)
                except ClientError as e:  # a protocol, connection, timeout or broker error; never a hang

                    assert str(e)
                else:  # random bytes that happen to decode: still a working connection object
                    await conn.close()
    run(main(), timeout=60)
