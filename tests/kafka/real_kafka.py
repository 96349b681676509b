"""Apache Kafka 4.4 in KRaft mode on 127.0.0.1, for the tests that compare against the real thing.

The jars come from Maven Central through tests/kafka/pom.xml (``fetch_libs``: ``mvn dependency:copy-dependencies``
into build/kafka-libs, cached in ~/.m2; `make test` runs it). ``start`` formats each node's storage with Kafka's
own tool (``kafka.tools.StorageTool``, one cluster id) and starts every node as combined broker + controller
(static voters), each a JVM in a process group of its own, on free ports; it returns once every broker
answers a Metadata request that lists them all, within ``timeout``. A node's log (Log4j 2, INFO) is in its
directory; ``KafkaCluster.logs()`` gives their tails for a failure's message. ``stop`` ends the groups by PID.

Each node listens on PLAINTEXT (principal User:ANONYMOUS) and, with ``sasl=True``, on SASL_PLAINTEXT too
(PLAIN and SCRAM-SHA-256/512 for ``SASL_USERS``, the SCRAM credentials written at format time; OAUTHBEARER
with unsecured tokens) with StandardAuthorizer on, its super users ``SUPER_USERS``: the plaintext listener
then stays all-powerful and the SASL users get what ACLs give them.

    python tests/kafka/real_kafka.py fetch     # the jars (what `make test` runs)
    python tests/kafka/real_kafka.py start 3   # a cluster in the foreground, Ctrl-C stops it
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
POM = HERE / "pom.xml"
LIBS = Path(os.environ.get("KCODEC_KAFKA_LIBS", REPO / "build" / "kafka-libs"))
STAMP = LIBS / ".fetched"
KAFKA_VERSION = "4.4.0"

# The SASL variant's users (PLAIN and SCRAM alike) and super users. ANONYMOUS is the plaintext listener's
# principal (and the controllers'), so everything but the SASL listener is unrestricted.
SASL_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
SUPER_USERS = ("ANONYMOUS", "admin")
SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# OAUTHBEARER with Kafka's default server callback: unsecured JWS tokens (alg none), as kcodec broker's
MECHANISMS = ("PLAIN", *SCRAM, "OAUTHBEARER")

# Settings every node gets. Few threads (a 2-core machine shared by several test runs); no delay before a
# group's first rebalance (as kcodec broker). Everything else is Kafka's default.
COMMON = {
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "group.initial.rebalance.delay.ms": "0",
}
JVM = ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
LOG4J = """\
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName={path}
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
logger.raft.name=org.apache.kafka.raft
logger.raft.level=WARN
"""


class KafkaError(RuntimeError):
    """Kafka could not be fetched or started; the message carries the nodes' log tails."""


def java() -> Optional[str]:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def libs_ready() -> bool:
    return STAMP.exists() and STAMP.stat().st_mtime >= POM.stat().st_mtime


def fetch_libs(quiet: bool = True) -> Path:
    """Kafka's jars into LIBS (once; again when pom.xml changes). Needs ``mvn`` (and Maven Central, or ~/.m2)."""
    if libs_ready():
        return LIBS
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaError("mvn is not on PATH: it fetches Apache Kafka's jars (Debian: apt-get install maven)")
    if LIBS.exists():
        shutil.rmtree(LIBS)
    cmd = [mvn, "-B", *(["-q"] if quiet else []), "-f", str(POM), "dependency:copy-dependencies",
           f"-Dkafka.libs={LIBS}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not any(LIBS.glob(f"kafka_2.13-{KAFKA_VERSION}.jar")):
        raise KafkaError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    STAMP.touch()
    return LIBS


def free_ports(n: int) -> list[int]:
    """n distinct ports the kernel just gave out (free now; a race with others is retried by ``start``)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _kafka_uuid() -> str:
    """A cluster id as Kafka's Uuid.toString: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass
class Node:
    node_id: int
    port: int                   # PLAINTEXT
    controller_port: int
    sasl_port: Optional[int]    # SASL_PLAINTEXT, with sasl=True
    directory: Path
    process: Optional[subprocess.Popen] = None

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    @property
    def output(self) -> Path:
        return self.directory / "stdout.txt"


@dataclass
class KafkaCluster:
    """A running Apache Kafka: ``bootstrap`` (PLAINTEXT), ``sasl_bootstrap`` (SASL_PLAINTEXT, or None)."""

    nodes: list[Node]
    cluster_id: str
    directory: Path
    configs: dict[str, str] = field(default_factory=dict)
    began: float = 0.0          # time.monotonic() before the first format
    started_in: float = 0.0     # seconds from the first format to the last broker's Metadata answer

    @property
    def sasl(self) -> bool:
        return self.nodes[0].sasl_port is not None

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    @property
    def sasl_bootstrap(self) -> Optional[str]:
        return ",".join(f"127.0.0.1:{n.sasl_port}" for n in self.nodes) if self.sasl else None

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [("127.0.0.1", n.port) for n in self.nodes]

    @property
    def sasl_addresses(self) -> list[tuple[str, int]]:
        return [("127.0.0.1", n.sasl_port) for n in self.nodes if n.sasl_port is not None]

    def logs(self, lines: int = 40) -> str:
        """The tail of every node's log and output, for a failure's message."""
        out = []
        for n in self.nodes:
            for path in (n.output, n.log):
                if path.exists():
                    tail = path.read_text(errors="replace").splitlines()[-lines:]
                    out.append(f"--- node {n.node_id}: {path}\n" + "\n".join(tail))
        return "\n".join(out)

    def alive(self) -> bool:
        return all(n.process is not None and n.process.poll() is None for n in self.nodes)

    def stop(self, grace: float = 2.0) -> None:
        """SIGTERM to each node's process group, SIGKILL to what is left after ``grace`` seconds."""
        running = [n.process for n in self.nodes if n.process is not None and n.process.poll() is None]
        for p in running:
            _signal_group(p, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for p in running:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(p, signal.SIGKILL)
                p.wait(10)


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)  # each node leads its own group (start_new_session)
    except ProcessLookupError:
        pass


def _properties(node: Node, nodes: list[Node], configs: dict[str, str]) -> str:
    listeners = [f"PLAINTEXT://127.0.0.1:{node.port}"]
    protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in nodes),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(node.directory / "data"),
        "offsets.topic.replication.factor": str(min(3, len(nodes))),
        "transaction.state.log.replication.factor": str(min(3, len(nodes))),
        "transaction.state.log.min.isr": str(min(2, len(nodes))),
        **COMMON,
    }
    if node.sasl_port is not None:
        listeners.append(f"SASL_PLAINTEXT://127.0.0.1:{node.sasl_port}")
        protocols.append("SASL_PLAINTEXT:SASL_PLAINTEXT")
        plain_users = " ".join(f'user_{u}="{p}"' for u, p in SASL_USERS.items())
        props.update({
            "sasl.enabled.mechanisms": ",".join(MECHANISMS),
            "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
            **{f"listener.name.sasl_plaintext.{m.lower()}.sasl.jaas.config":
               "org.apache.kafka.common.security.scram.ScramLoginModule required;" for m in SCRAM},
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": ";".join(f"User:{u}" for u in SUPER_USERS),
        })
    advertised = [x for x in listeners]
    listeners.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
    props.update({"listeners": ",".join(listeners), "advertised.listeners": ",".join(advertised),
                  "listener.security.protocol.map": ",".join(protocols)})
    props.update(configs)
    return "".join(f"{k}={v}\n" for k, v in props.items())


def _java_cmd(node: Node, main: str, *args: str) -> list[str]:
    exe = java()
    if exe is None:
        raise KafkaError("java is not on PATH (Java 17+; Debian: apt-get install openjdk-17-jre-headless)")
    return [exe, *JVM, f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
            "-cp", str(LIBS / "*"), main, *args]


def _format(nodes: list[Node], cluster_id: str, sasl: bool) -> None:
    """Every node's storage, formatted by Kafka's StorageTool (the JVMs run side by side)."""
    extra: list[str] = []
    if sasl:  # KRaft keeps SCRAM credentials in the metadata log: written with the storage's first records
        for mechanism in SCRAM:
            for user, password in SASL_USERS.items():
                extra += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
    running = [(n, subprocess.Popen(_java_cmd(n, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                                              "-c", str(n.directory / "server.properties"), *extra),
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    text=True, start_new_session=True)) for n in nodes]
    failed = []
    for n, p in running:
        try:
            out, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            _signal_group(p, signal.SIGKILL)
            out, _ = p.communicate()
        if p.returncode != 0:
            failed.append(f"formatting node {n.node_id} failed ({p.returncode}):\n{out}")
    if failed:
        raise KafkaError("\n".join(failed))


def _metadata_brokers(address: tuple[str, int]) -> Optional[int]:
    """How many brokers a Metadata answer from ``address`` lists (None: no answer yet)."""
    from kcodec.client import ClientError, SyncClient

    try:
        with SyncClient(f"{address[0]}:{address[1]}", connect_timeout=2, request_timeout=2) as c:
            return len(c.describe_cluster(timeout=2).brokers)
    except ClientError:
        return None


def start(brokers: int = 1, *, sasl: bool = False, configs: Optional[dict[str, str]] = None,
          directory: Optional[Path] = None, timeout: float = 120.0, attempts: int = 3) -> KafkaCluster:
    """Format and start a KRaft cluster of ``brokers`` combined nodes; see the module's docstring."""
    fetch_libs()
    base = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="real-kafka-"))
    last: Optional[KafkaError] = None
    for attempt in range(attempts):
        cluster = _start_once(brokers, sasl, dict(configs or {}), base / f"try-{attempt}", timeout)
        try:
            _wait_ready(cluster, timeout)
            return cluster
        except KafkaError as e:
            cluster.stop(grace=1.0)
            if "Address already in use" not in cluster.logs(400):
                raise
            last = e  # lost a port between picking and binding it: again, on others
    assert last is not None
    raise last


def _start_once(brokers: int, sasl: bool, configs: dict[str, str], base: Path, timeout: float) -> KafkaCluster:
    ports = free_ports(brokers * (3 if sasl else 2))
    nodes = []
    for i in range(brokers):
        chunk = ports[i * (3 if sasl else 2):(i + 1) * (3 if sasl else 2)]
        nodes.append(Node(i + 1, chunk[0], chunk[1], chunk[2] if sasl else None, base / f"node-{i + 1}"))
    cluster = KafkaCluster(nodes, _kafka_uuid(), base, configs, began=time.monotonic())
    for n in nodes:
        n.directory.mkdir(parents=True)
        (n.directory / "server.properties").write_text(_properties(n, nodes, configs))
        (n.directory / "log4j2.properties").write_text(LOG4J.format(path=n.log))
    _format(nodes, cluster.cluster_id, sasl)
    for n in nodes:
        with open(n.output, "wb") as out:
            n.process = subprocess.Popen(_java_cmd(n, "kafka.Kafka", str(n.directory / "server.properties")),
                                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
    return cluster


def _wait_ready(cluster: KafkaCluster, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    want = len(cluster.nodes)
    pending = list(cluster.addresses)
    while pending:
        if not cluster.alive():
            raise KafkaError(f"a Kafka node exited while starting:\n{cluster.logs()}")
        if time.monotonic() > deadline:
            cluster.stop(grace=1.0)
            raise KafkaError(f"Kafka did not answer Metadata with {want} brokers within {timeout:.0f} s:\n"
                             f"{cluster.logs()}")
        if _metadata_brokers(pending[0]) == want:
            pending.pop(0)
        else:
            time.sleep(0.25)
    cluster.started_in = time.monotonic() - cluster.began


def main(argv: list[str]) -> int:
    if argv[:1] == ["fetch"]:
        print(f"Apache Kafka {KAFKA_VERSION}'s jars: {fetch_libs(quiet=False)}")
        return 0
    if argv[:1] == ["start"]:
        n = int(argv[1]) if len(argv) > 1 else 1
        cluster = start(n, sasl="--sasl" in argv)
        print(f"Kafka {KAFKA_VERSION}, {n} node(s), started in {cluster.started_in:.1f} s: bootstrap {cluster.bootstrap}"
              + (f", SASL {cluster.sasl_bootstrap}" if cluster.sasl else "") + f"; logs in {cluster.directory}",
              flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the finally below stops the nodes
        try:
            while cluster.alive():
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        finally:
            cluster.stop()
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
