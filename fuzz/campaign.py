"""A fuzzing campaign against kcodec's decoders and the broker, for a number of minutes (or inputs) and a seed.

    .venv/bin/python fuzz/campaign.py --minutes 10 --seed 1 [--out build/campaign]
    .venv/bin/python fuzz/campaign.py --inputs 300 --seed 1          # a fixed number of inputs
    .venv/bin/python fuzz/campaign.py --replay build/campaign/seed-1/findings/000123-body.bin

`make fuzz MINUTES=N SEED=S` runs it. The inputs (campaign_inputs.py) are mutations of real frames, record
vectors, generated instances of every message and record batches of every magic and codec; each is checked
(campaign_checks.py, campaign_broker.py) in a child process, in chunks, under a per-input time limit and a
tracemalloc bound on the peak relative to the input's size. A child that dies (a segfault, an abort) or stops
reporting is bisected down to the input that did it. Every failing input is written to OUT/seed-S/findings as
NNNNNN-kind.bin with a .txt beside it: one line, "kind meta<TAB>reason".
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

INPUT_SECONDS = 10.0   # one input's checks, in-process (a C loop that ignores signals: the parent's watch)
MEMORY_FLOOR = 8 << 20  # a peak under this is never a finding; above it, at most MEMORY_PER_BYTE per input byte
MEMORY_PER_BYTE = 400
CHUNK = 400
PER_SIGNATURE = 20     # failing inputs written for one kind of finding; the rest are counted


# --------------------------------------------------------------------------------------------- the child

class InputTimeout(BaseException):
    """Raised by the per-input timer (a BaseException: no reader's `except Exception` takes it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise InputTimeout()


def check_one(kind: str, meta: str, data: bytes, broker: Any) -> Optional[str]:
    """None, or the finding's one-line reason."""
    import tracemalloc

    from campaign_broker import broker_check
    from campaign_checks import CHECKS, Finding, inflatable

    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    signal.setitimer(signal.ITIMER_REAL, INPUT_SECONDS)
    try:
        CHECKS[kind](meta, data)
    except Finding as e:
        return f"differ: {e}"
    except InputTimeout:
        return f"hang: over {INPUT_SECONDS} s"
    except RecursionError:
        return "crash: RecursionError"
    except Exception as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        return f"crash: {type(e).__name__}: {str(e)[:200]} ({Path(where.filename).name}:{where.lineno})"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    peak = tracemalloc.get_traced_memory()[1] - base
    if peak > MEMORY_FLOOR + MEMORY_PER_BYTE * (len(data) + (inflatable(data) if kind == "records" else 0)):
        return f"memory: peak {peak} bytes for a {len(data)}-byte input"
    if broker is not None:
        try:
            problem = broker_check(broker, kind, data)
        except Exception as e:  # the socket side of the check itself: say so rather than kill the chunk
            problem = f"the exchange failed: {type(e).__name__}: {e}"
        if problem:
            return f"broker: {problem}"
    return None


def child(args: argparse.Namespace) -> None:
    """Run the given inputs; report "start i" before each, "fail i reason" for each finding, "done" at the end."""
    import resource
    import tracemalloc
    import warnings

    from campaign_inputs import make_input

    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))  # a runaway allocation fails, not the machine
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, _on_alarm)
    seeds = pickle.loads(Path(args.seeds).read_bytes())
    indices = json.loads(sys.stdin.read())
    broker = None
    if not args.no_broker:
        from campaign_broker import BrokerTarget
        broker = BrokerTarget()
    tracemalloc.start()
    out = sys.stdout
    try:
        for i in indices:
            out.write(f"start {i}\n")
            out.flush()
            if os.environ.get("KCODEC_CAMPAIGN_CRASH_AT") == str(i):  # the runner's own test: a segfault here
                os.kill(os.getpid(), signal.SIGSEGV)
            kind, meta, data = make_input(seeds, args.seed, i)
            reason = check_one(kind, meta, data, broker)
            if reason:
                out.write(f"fail {i} {reason.replace(chr(10), ' ')}\n")
                out.flush()
            if broker is not None and broker.dead:
                break
        out.write("done\n")
        out.flush()
    finally:
        if broker is not None:
            broker.close()


# --------------------------------------------------------------------------------------------- the parent

class Campaign:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(args.out) / f"seed-{args.seed}"
        self.found = self.root / "findings"
        self.found.mkdir(parents=True, exist_ok=True)
        self.seeds_file = self.root / "seeds.pickle"
        self.signatures: dict[str, int] = {}
        self.findings = 0
        self.inputs = 0
        self._seeds: Optional[list] = None

    def prepare(self) -> None:
        from campaign_inputs import build_seeds

        made = Path(__file__).with_name("campaign_inputs.py").stat().st_mtime
        if not self.seeds_file.exists() or self.seeds_file.stat().st_mtime < made:
            seeds = build_seeds(self.args.seed, Path(self.args.shared))
            self.seeds_file.write_bytes(pickle.dumps(seeds))
        self._seeds = pickle.loads(self.seeds_file.read_bytes())

    def run_child(self, indices: list[int]) -> tuple[list[tuple[int, str]], Optional[int], str]:
        """(findings, the input a dead or stuck child was on or None, why it ended)."""
        cmd = [sys.executable, str(HERE / "campaign.py"), "--child", "--seed", str(self.args.seed),
               "--seeds", str(self.seeds_file)] + (["--no-broker"] if self.args.no_broker else [])
        with open(self.root / "children.log", "a") as log:  # what children say on stderr (a crash's trace)
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(json.dumps(indices))
        p.stdin.close()
        fails: list[tuple[int, str]] = []
        current: Optional[int] = None
        done = False
        limit = 120.0  # the first report waits for imports, the seeds and the broker
        while True:
            ready, _, _ = select.select([p.stdout], [], [], limit)
            if not ready:
                p.kill()
                p.wait()
                return fails, current, f"hang: the child stopped reporting for {limit:.0f} s"
            line = p.stdout.readline()
            if not line:
                break
            word, _, rest = line.rstrip("\n").partition(" ")
            if word == "start":
                current, limit = int(rest), INPUT_SECONDS * 3 + 15
            elif word == "fail":
                i, _, reason = rest.partition(" ")
                fails.append((int(i), reason))
            elif word == "done":
                done = True
        code = p.wait()
        if done and code == 0:
            return fails, None, "ok"
        why = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit status {code}"
        if current is None:
            raise RuntimeError(f"a child failed before its first input ({why}): see {self.root / 'children.log'}")
        return fails, current, f"crash: the child died: {why}"

    def run(self, indices: list[int]) -> None:
        """Run indices in children until all have run; bisect whatever kills a child."""
        todo = list(indices)
        while todo:
            fails, stuck, why = self.run_child(todo)
            for i, reason in fails:
                self.record(i, reason)
            if stuck is None:
                if fails and "stopped answering" in fails[-1][1]:  # that child's broker is gone: a new one
                    todo = todo[todo.index(fails[-1][0]) + 1:]
                    continue
                return
            at = todo.index(stuck)
            self.isolate(todo[:at + 1], why)
            todo = todo[at + 1:]

    def isolate(self, prefix: list[int], why: str) -> None:
        """prefix killed a child at its last input: that input alone, or the shortest prefix that does it."""
        last = prefix[-1]
        if len(prefix) == 1 or self.run_child([last])[1] is not None:
            self.record(last, why)
            return
        lo, hi = 0, len(prefix) - 1  # prefix[lo:] with last kills; find the largest lo that still does
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.run_child(prefix[mid:])[1] is not None:
                lo = mid
            else:
                hi = mid
        self.record(last, f"{why} (only after input {prefix[lo]})")

    def record(self, i: int, reason: str) -> None:
        from campaign_inputs import make_input

        assert self._seeds is not None
        self.findings += 1
        signature = reason.split(":")[0] + ":" + "".join(c for c in reason[:90] if not c.isdigit())
        seen = self.signatures[signature] = self.signatures.get(signature, 0) + 1
        print(f"finding: input {i}: {reason}", flush=True)
        if seen > PER_SIGNATURE:
            return
        kind, meta, data = make_input(self._seeds, self.args.seed, i)
        (self.found / f"{i:06d}-{kind}.bin").write_bytes(data)
        (self.found / f"{i:06d}-{kind}.txt").write_text(f"{kind} {meta}\t{reason}\n")

    def main(self) -> dict:
        self.prepare()
        start = time.monotonic()
        deadline = start + self.args.minutes * 60 if self.args.minutes else None
        total = self.args.inputs
        next_i = 0
        while (total is None or next_i < total) and (deadline is None or time.monotonic() < deadline):
            n = CHUNK if total is None else min(CHUNK, total - next_i)
            self.run(list(range(next_i, next_i + n)))
            next_i += n
            self.inputs = next_i
            print(f"{next_i} inputs, {self.findings} findings, {time.monotonic() - start:.0f} s", flush=True)
        summary = {"seed": self.args.seed, "inputs": self.inputs, "seconds": round(time.monotonic() - start),
                   "findings": self.findings, "kinds": self.signatures, "seeds": len(self._seeds or [])}
        (self.root / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        return summary


def replay(path: Path, no_broker: bool) -> Optional[str]:
    """Check one saved input again, in this process (no per-input memory baseline from earlier inputs)."""
    import tracemalloc

    from campaign_broker import BrokerTarget

    head = path.with_suffix(".txt").read_text().split("\t")[0]
    kind, _, meta = head.partition(" ")
    signal.signal(signal.SIGALRM, _on_alarm)
    broker = None if no_broker or kind != "request" else BrokerTarget()
    tracemalloc.start()
    try:
        return check_one(kind, meta, path.read_bytes(), broker)
    finally:
        if broker is not None:
            broker.close()


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=None)
    p.add_argument("--inputs", type=int, default=None, help="a fixed number of inputs (instead of minutes)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=str(HERE.parent / "build" / "campaign"))
    p.add_argument("--shared", default=os.environ.get("KCODEC_SHARED", str(HERE.parent.parent / "shared")))
    p.add_argument("--no-broker", action="store_true", help="leave out the broker's checks")
    p.add_argument("--replay", type=Path, help="check one saved failing input again")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--seeds", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not (args.child or args.replay) and (args.minutes is None) == (args.inputs is None):
        p.error("give --minutes or --inputs")
    return args


if __name__ == "__main__":
    # The checks set the backends against each other themselves, swapping the record readers' backend per
    # call: KCODEC_PURE=1 (a test run of the reference) would fix the record classes chosen at import to
    # the reference's while the compiled readers are swapped in, a mix no program makes. Children inherit.
    os.environ.pop("KCODEC_PURE", None)
    a = parse(sys.argv[1:])
    if a.child:
        child(a)
    elif a.replay:
        print(replay(a.replay, a.no_broker) or "passes")
    else:
        s = Campaign(a).main()
        print(json.dumps(s))
        sys.exit(1 if s["findings"] else 0)
