"""The client side of one benchmarks/broker_data.py round, run in a fresh Python process of its own:
`python benchmarks/broker_client.py SPEC` (SPEC a JSON object, see ``Spec``) creates the topic, produces
(confluent-kafka, acks=all) and consumes the case through the broker at ``bootstrap`` and prints one JSON
object on stdout: the timed spans and what was counted meanwhile (``measure()``).

Why a process of its own: the client's rate followed the state of the process it ran in (its heap, its
threads, what earlier benchmark suites left there), 0.93 and 1.94x Tansu in two runs inside `make
bench-report`'s process against 1.08-1.26x in a fresh one (benchmarks/NOTES.md, broker12). Each round's client
now starts alike for every broker. Its own start and imports are outside the timed spans, which begin after
the first message is delivered; ``ready`` (time.monotonic(), one clock for every process) says when they
were done. Only the standard library and confluent_kafka are imported here."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional, TypedDict

TOPIC = "bench-data"


class Spec(TypedDict):
    bootstrap: str
    broker_pid: int  # the broker's CPU is read from /proc at the phases' edges
    size: int  # message bytes
    partitions: int
    total_bytes: int
    log: Optional[str]  # librdkafka's fetch log of the consume goes here (``debug=fetch,protocol``)


@contextlib.contextmanager
def _stderr_to(path: Optional[str]) -> Iterator[None]:
    """librdkafka writes its log to file descriptor 2: there, to ``path``, for the block."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    saved = os.dup(2)
    os.dup2(fd, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def thread_schedstat() -> tuple[float, float]:
    """The calling thread's time on a CPU and waiting on a run queue so far, in seconds (NaN where the kernel
    keeps no schedstat): a loop that never blocks takes the sum of the two."""
    try:
        run_ns, wait_ns = Path("/proc/thread-self/schedstat").read_text().split()[:2]
    except (OSError, ValueError):
        return float("nan"), float("nan")
    return int(run_ns) / 1e9, int(wait_ns) / 1e9


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (the state first)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its reaped children so far (/proc/PID/stat)."""
    return sum(int(x) for x in _stat(pid)[11:15]) / os.sysconf("SC_CLK_TCK")


def minor_faults(pid: int) -> int:
    """Minor page faults of a process so far: each first touch of fresh memory."""
    return int(_stat(pid)[7])


def major_faults(pid: int) -> int:
    """Major page faults of a process so far: pages read from a file or swap."""
    return int(_stat(pid)[9])


def threads_cpu(pid: int) -> dict[str, float]:
    """User CPU ("NAME") and system CPU ("NAME sys") of a process's threads so far, summed by thread name
    (librdkafka names its threads rdk:main, rdk:broker1, ...; the Python thread has the process's name): a
    first touch of fresh memory (a page fault) is the system time of the thread that touches it."""
    out: dict[str, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:  # a thread that ended meanwhile
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        for key, ticks in ((name, fields[11]), (f"{name} sys", fields[12])):
            out[key] = out.get(key, 0.0) + int(ticks) / os.sysconf("SC_CLK_TCK")
    return out


def _check(spec: Any) -> Spec:
    """``spec`` as a Spec, or ValueError saying which field is wrong."""
    if not isinstance(spec, dict):
        raise ValueError(f"the spec is a JSON object, not {type(spec).__name__}")
    for key, kind in (("bootstrap", str), ("broker_pid", int), ("size", int), ("partitions", int),
                      ("total_bytes", int)):
        if not isinstance(spec.get(key), kind) or isinstance(spec.get(key), bool):
            raise ValueError(f"spec[{key!r}]: a {kind.__name__}, not {spec.get(key)!r}")
    for key in ("broker_pid", "size", "partitions"):
        if spec[key] < 1:
            raise ValueError(f"spec[{key!r}]: at least 1, not {spec[key]}")
    if spec["total_bytes"] < 2 * spec["size"]:
        raise ValueError(f"spec['total_bytes']: at least two messages of {spec['size']} B, not {spec['total_bytes']}")
    if spec.get("log") is not None and not isinstance(spec["log"], str):
        raise ValueError(f"spec['log']: a path or null, not {spec['log']!r}")
    return {**spec, "log": spec.get("log")}  # type: ignore[typeddict-item]


def measure(spec: Spec) -> dict[str, Any]:
    """One case through the broker: the fields of broker_data.Result that the client measures."""
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic

    ready = time.monotonic()
    bootstrap, pid, size, partitions, total_bytes = (spec["bootstrap"], spec["broker_pid"], spec["size"],
                                                     spec["partitions"], spec["total_bytes"])
    n = total_bytes // size
    value = b"x" * size
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(20)
    time.sleep(0.5)  # Tansu answers CreateTopics before its metadata has the topic
    p = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                     "batch.size": 1_000_000, "queue.buffering.max.messages": 2_000_000,
                     "message.timeout.ms": 60_000})
    failed: list[str] = []
    p.produce(TOPIC, value, partition=0, on_delivery=lambda e, _m: e and failed.append(str(e)))
    p.flush(30)  # the producer knows the leaders before the clock starts
    cpu0 = cpu_seconds(pid)
    sched0 = thread_schedstat()
    t0 = time.perf_counter()
    for i in range(n - 1):
        p.produce(TOPIC, value, partition=i % partitions)
        if i % 100_000 == 0:
            p.poll(0)
    loop_s = time.perf_counter() - t0
    sched1 = thread_schedstat()
    left = p.flush(120)
    produce_s = time.perf_counter() - t0
    if left or failed:
        raise RuntimeError(f"{left} undelivered, {failed[:3]}")
    # the whole case may wait in librdkafka's queue: past queued.min.messages (100,000) it pauses fetching
    # for fetch.queue.backoff.ms (1 s), so small messages would measure that pause, not the broker. The
    # fetch sizes are librdkafka's own (max.partition.fetch.bytes 1 MiB, fetch.max.bytes 50 MiB): Tansu
    # answers about 5 MB whatever they are, so a size set here would pace only a broker that honours it
    cpu1 = cpu_seconds(pid)
    log = spec["log"]
    with _stderr_to(log):
        c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "queued.min.messages": 2 * n, "queued.max.messages.kbytes": 4 * total_bytes // 1024,
                         **({"debug": "fetch,protocol"} if log is not None else {})})
        c.assign([ck.TopicPartition(TOPIC, q, 0) for q in range(partitions)])
        got = 0
        first = float("nan")
        since = time.time()
        sched2 = thread_schedstat()
        client0 = cpu_seconds(os.getpid())
        faults0, major0, threads0 = minor_faults(os.getpid()), major_faults(os.getpid()), threads_cpu(os.getpid())
        t0 = time.perf_counter()
        deadline = t0 + 120
        while got < n and time.perf_counter() < deadline:
            messages = c.consume(10_000, 0.5)
            if messages and not got:  # the first call that returns any (it waits for 10,000)
                first = time.perf_counter() - t0
            for m in messages:
                if m.error():
                    raise RuntimeError(str(m.error()))
                got += 1
        consume_s = time.perf_counter() - t0
        sched3 = thread_schedstat()
        client1 = cpu_seconds(os.getpid())
        faults1, major1, threads1 = minor_faults(os.getpid()), major_faults(os.getpid()), threads_cpu(os.getpid())
        cpu2 = cpu_seconds(pid)
        c.close()
    del p, admin  # before the broker stops: no reconnect attempts logged
    if got != n:
        raise RuntimeError(f"consumed {got} of {n}")
    return {"messages": n, "produce_s": produce_s, "consume_s": consume_s, "first_s": first,
            "produce_cpu_s": cpu1 - cpu0, "consume_cpu_s": cpu2 - cpu1, "loop_s": loop_s,
            "loop_cpu_s": sched1[0] - sched0[0], "loop_cpu_wait_s": sched1[1] - sched0[1],
            "consume_loop_cpu_s": sched3[0] - sched2[0], "consume_cpu_wait_s": sched3[1] - sched2[1],
            "client_threads_cpu_s": client1 - client0 - (sched3[0] - sched2[0]),
            "client_faults": faults1 - faults0, "client_major_faults": major1 - major0,
            "client_threads": {k: round(v - threads0.get(k, 0.0), 3) for k, v in sorted(threads1.items())
                               if v > threads0.get(k, 0.0)},
            "ready": ready, "log_since": since}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: broker_client.py SPEC (a JSON object: bootstrap, broker_pid, size, partitions, "
              "total_bytes, log)", file=sys.stderr)
        return 2
    try:
        spec = _check(json.loads(argv[0]))
    except ValueError as e:  # json.JSONDecodeError is one
        print(f"broker_client.py: bad spec: {e}", file=sys.stderr)
        return 2
    print(json.dumps(measure(spec)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
