"""``kcodec showcase`` (``make run``): the main job, as a list of steps that share one context.

    setup    find the 1,000-topic payloads (../shared/vectors/metadata) and the cluster they describe
    sizes    exact bytes of Metadata / ListTopics / DescribeTopicPartitions for that cluster (the figures
             457,655 / 474,672 / 32,045 are checked), and a sweep from 10 to 100,000 topics
    codecs   decode and encode times at 1,000 topics: kcodec's backends, kio and kafka-python
    traffic  `kcodec broker` (3 brokers), real admin clients through `kcodec tap` into a capture
    analyze  `kcodec analyze` of that capture on Spark (local[2]), checked against what the clients did
    report   Markdown + PNGs into the report folder; the headline table on stdout

A step is ``Step(name, title, fn)`` with ``fn(ctx: Context) -> None``; it adds Markdown to
``ctx.sections`` and raises to fail (the other steps still run, the job exits 1), or raises
``Skip(reason)`` when something it needs is missing here (said on the console and in the report).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

if TYPE_CHECKING:  # the steps and their imports load when the job runs, not with `kcodec --help`
    from .context import Context


class Step(NamedTuple):
    name: str
    title: str
    fn: Callable[["Context"], None]


def _steps() -> list[Step]:
    from . import e2e, steps

    return [
        Step("setup", "Set-up", steps.setup),
        Step("sizes", "Response sizes", steps.sizes),
        Step("codecs", "Decode and encode at 1,000 topics", steps.codecs),
        Step("traffic", "Real clients through kcodec tap to kcodec broker", e2e.traffic_step),
        Step("analyze", "The capture on Spark", e2e.analyze_step),
        Step("report", "Report", steps.report),
    ]


def _default_vectors() -> Path:
    env = os.environ.get("KCODEC_SHARED")
    shared = Path(env) if env else Path(__file__).resolve().parents[3] / "shared"
    return shared / "vectors" / "metadata"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vectors", type=Path, default=_default_vectors(), help="the 1,000-topic Metadata payloads")
    p.add_argument("--out", type=Path, default=Path("report"), help="report folder (default ./report)")
    p.add_argument("--topics", default="10,100,1k,10k,100k", help="topic counts of the size sweep")
    p.add_argument("--decode-max", default="10k", help="time real decodes in the sweep up to this many topics")
    p.add_argument("--repeat", type=int, default=3, help="timing rounds (best is kept)")
    p.add_argument("--steps", help="comma-separated subset of the steps (default: all)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("-v", "--verbose", action="store_true", help="let Spark's own log lines through")
    p.add_argument("--master", default="local[2]", help="Spark master of the analyze step (default local[2])")


def run(args: Any) -> int:
    from .context import Context, Skip

    all_steps = _steps()
    chosen = all_steps
    if args.steps:
        names = [s.strip() for s in args.steps.split(",")]
        unknown = [n for n in names if n not in {s.name for s in all_steps}]
        if unknown:
            print(f"unknown steps {unknown}; steps are {[s.name for s in all_steps]}", file=sys.stderr)
            return 2
        chosen = [s for s in all_steps if s.name in names]
    ctx = Context(vectors=args.vectors, out_dir=args.out, topics=args.topics, decode_max=args.decode_max,
                  repeat=max(1, args.repeat), quiet=args.quiet, master=args.master,
                  verbose=args.verbose)
    start = time.perf_counter()
    ctx.progress.say(f"showcase: {len(chosen)} steps, report in {args.out}", keep=True)
    for i, step in enumerate(chosen, 1):
        t = time.perf_counter()
        ctx.progress.say(f"[{step.name}] {step.title} (step {i}/{len(chosen)})", keep=True)  # steps print below
        try:
            step.fn(ctx)
        except Skip as e:
            ctx.skipped.append(f"{step.name}: {e}")
            print(f"step {step.name} skipped: {e}", file=ctx.out)
        except Exception as e:
            ctx.failures.append(f"{step.name}: {type(e).__name__}: {e}")
            print(f"step {step.name} failed:\n{traceback.format_exc()}", file=sys.stderr)
            if step.name == "setup":
                break
        ctx.timings[step.name] = time.perf_counter() - t
        ctx.progress.say(f"[{step.name}] {i}/{len(chosen)} steps, this one {ctx.timings[step.name]:.1f} s", keep=True)
    ctx.progress.close()
    print(f"\n{len(chosen)} steps in {time.perf_counter() - start:.1f} s"
          + (f"; skipped: {'; '.join(ctx.skipped)}" if ctx.skipped else "")
          + (f"; FAILED: {'; '.join(ctx.failures)}" if ctx.failures else ""), file=ctx.out)
    return 1 if ctx.failures else 0
