"""The showcase's steps (see kcodec/showcase/__init__.py). Each reads and adds to the shared Context."""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path
from typing import Optional

import kcodec
from kcodec.messages import MetadataRequest, MetadataResponse
from kcodec.sizes import ListedCluster, SyntheticCluster, list_topics_response, measure
from kcodec.sizes.output import grid, plot, render
from kcodec.sizes.sweep import REFERENCE, parse_counts, payloads, sweep
from kcodec.sizes.timing import time_backends

from .context import Context
from .peers import peer_versions, time_codecs

LABELS_1K = ["Metadata v1", "Metadata v12", "ListTopics v0", "ListTopics v1", "DescribeTopicPartitions v0",
             "MetadataRequest v12 names", "MetadataRequest v12 ids"]


def setup(ctx: Context) -> None:
    bodies = {}
    for v in (1, 12):
        path = ctx.vectors / f"metadata_v{v}_1k_body.bin"
        if not path.exists():
            raise FileNotFoundError(f"missing {path}: pass --vectors DIR (../shared/vectors/metadata)")
        bodies[v] = path.read_bytes()
    cluster = ListedCluster.from_metadata(kcodec.decode(MetadataResponse, bodies[12], 12))
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    peers = peer_versions()
    ctx.results["setup"] = {"bodies": bodies, "cluster": cluster, "peers": peers}
    env = [f"kcodec {kcodec.__version__}, default backend: {kcodec.BACKEND}",
           f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs",
           "peers: " + (", ".join(f"{k} {v}" for k, v in peers.items()) or "none installed"),
           f"payloads: {ctx.vectors} ({len(cluster)} topics, "
           f"{sum(len(t.partitions) for t in cluster.topics())} partitions, {len(cluster.brokers)} brokers)"]
    for line in env:
        print(line, file=ctx.out)
    ctx.sections.append("## Set-up\n\n" + "\n".join(f"- {x}" for x in env) + "\n")


def sizes(ctx: Context) -> None:
    bodies, cluster = ctx.results["setup"]["bodies"], ctx.results["setup"]["cluster"]
    s = measure(cluster)
    # The per-topic sums must give the payloads' own lengths, and ListTopics its full encode.
    lt_full = len(kcodec.encode(list_topics_response(cluster), 0))
    checks = [("Metadata v1", s.metadata[1], len(bodies[1])), ("Metadata v12", s.metadata[12], len(bodies[12])),
              ("ListTopics v0", s.list_topics[0], lt_full)]
    bad = [f"{n}: {a:,} summed, {b:,} real" for n, a, b in checks if a != b]
    if bad:
        raise AssertionError("sizes disagree: " + "; ".join(bad))
    one_k = {"Metadata v1": (s.metadata[1], 1), "Metadata v12": (s.metadata[12], 1),
             "ListTopics v0": (s.list_topics[0], 1), "ListTopics v1": (s.list_topics[1], 1),
             "DescribeTopicPartitions v0": (s.dtp_bytes, s.dtp_pages),
             "MetadataRequest v12 names": (s.request_by_name[12], 1), "MetadataRequest v12 ids": (s.request_by_id[12], 1)}
    ctx.results["sizes"] = {"one_k": one_k, "sizes": s}
    print(f"1,000 topics: Metadata v1 {s.metadata[1]:,} B, v12 {s.metadata[12]:,} B, ListTopics {s.list_topics[0]:,} B"
          " (sums = payload lengths)", file=ctx.out)

    counts = parse_counts(ctx.topics)
    base = SyntheticCluster(topic_count=max(counts, default=0))
    rows = sweep(base, counts, (1, 12), decode_max=parse_counts(ctx.decode_max)[0], repeat=ctx.repeat,
                 progress=ctx.progress)
    ctx.results["sizes"]["rows"] = rows
    for fmt, name in (("csv", "sweep.csv"), ("json", "sweep.json")):
        (ctx.out_dir / name).write_text(render(rows, fmt))
        ctx.files.append(ctx.out_dir / name)
    pngs = plot(rows, ctx.out_dir / "sizes.png", "10 partitions/topic, RF 3, 6 brokers (3 racks), names of 20-40 chars")
    ctx.files += pngs

    versions = grid(["Metadata version"] + [f"v{v}" for v in s.metadata],
                      [["bytes"] + [f"{b:,}" for b in s.metadata.values()]], markdown=True)
    requests = grid(["MetadataRequest v12 naming all topics", "bytes"],
                      [["by name", f"{s.request_by_name[12]:,}"], ["by topic id", f"{s.request_by_id[12]:,}"],
                       ["(all topics: topics=null)", f"{kcodec.encoded_size(MetadataRequest(topics=None), 12):,}"]],
                      markdown=True)
    ctx.sections.append(
        "## Response sizes\n\n"
        f"The cluster of `../shared/vectors/metadata`: {s.topics:,} topics, {s.partitions:,} partitions. Sizes are "
        "per-topic sums of `kcodec.encoded_size` (the sums equal the payloads' lengths: checked). "
        f"DescribeTopicPartitions (KIP-966) needs {s.dtp_pages} pages of at most {s.partition_limit:,} partitions "
        f"(the largest {s.dtp_largest:,} B; the {s.dtp_pages} requests {s.dtp_request_bytes:,} B together).\n\n"
        + grid(["message", "bytes", f"x {REFERENCE}", "pages"],
                 [[k, f"{b:,}", f"{b / s.list_topics[0]:.2f}", str(p)] for k, (b, p) in one_k.items()], markdown=True)
        + "\n### Metadata at every version (same cluster)\n\n" + versions
        + "\n### Asking for every topic\n\n" + requests
        + f"\n### From 10 to {max(counts):,} topics (model cluster, seed 0)\n\n"
        "Bytes are exact at every count; decode times come from real decodes of encoded responses up to "
        f"{parse_counts(ctx.decode_max)[0]:,} topics, each backend in its own process (median of {ctx.repeat} rounds, each call counted with freeing its result). "
        "Raw data: [sweep.csv](sweep.csv), [sweep.json](sweep.json).\n\n"
        + render(rows, "markdown") + "\n" + "".join(f"![{p.stem}]({p.name})\n" for p in pngs))


def codecs(ctx: Context) -> None:
    bodies, cluster = ctx.results["setup"]["bodies"], ctx.results["setup"]["cluster"]
    made = payloads(cluster, (1, 12), 2000)
    for p in made[:2]:  # the model re-makes the real payloads byte for byte
        if p.bodies[0] != bodies[p.version]:
            raise AssertionError(f"{p.label} made from the decoded cluster differs from the payload")
    ctx.progress.say("[codecs] kcodec beside its peers, in interleaved rounds")
    found, notes = time_codecs(made, ctx.repeat)
    versions = ctx.results["setup"]["peers"]
    times = {f"{k} {versions.get(k, '')}".strip(): v for k, v in found.items()}
    if kcodec.BACKEND != "python":
        ctx.progress.say("[codecs] kcodec's reference backend, in its own process")
        times.update({f"kcodec ({b})": r for b, r in time_backends(made, ctx.repeat, backends=("python",)).items()})
    ctx.results["codecs"] = {"times": times, "notes": notes}
    sections = ["## Decode and encode at 1,000 topics\n\n"
                "The same bytes for every codec (Metadata: the payloads of `../shared/vectors/metadata`; the others "
                f"made from the cluster they describe); milliseconds per call plus dropping its result, median of "
                 f"{ctx.repeat} interleaved rounds, all pages for "
                "DescribeTopicPartitions; every codec's re-encoding equals the bytes it decoded.\n"]
    for op in ("decode", "encode"):
        head = ["message"] + list(times)
        rows = [[m] + [f"{times[c][m][op] * 1e3:.2f}" if m in times[c] else "-" for c in times] for m in LABELS_1K]
        sections.append(f"\n### {op} ms\n\n" + grid(head, rows, markdown=True))
    if notes:
        sections.append("\n" + "\n".join(f"- {n}" for n in notes) + "\n")
    png = _codec_plot(times, ctx.out_dir / "codecs.png")
    if png:
        ctx.files.append(png)
        sections.append(f"\n![codecs]({png.name})\n")
    ctx.sections.append("".join(sections))


def _codec_plot(times: dict[str, dict[str, dict[str, float]]], path: Path) -> Optional[Path]:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    codecs_ = list(times)
    width = 0.8 / max(1, len(codecs_))
    for ax, op in zip(axes, ("decode", "encode")):
        for k, c in enumerate(codecs_):
            ys = [times[c][m][op] * 1e3 if m in times[c] else 0 for m in LABELS_1K]
            ax.barh([i + k * width for i in range(len(LABELS_1K))], ys, height=width, label=c)
        ax.set_xscale("log")
        ax.set_yticks([i + 0.4 - width / 2 for i in range(len(LABELS_1K))])
        ax.set_yticklabels(LABELS_1K, fontsize=8)
        ax.set_xlabel(f"{op} ms (log)")
        ax.set_title(f"{op}, 1,000 topics")
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[0].invert_yaxis()  # once: the y axis is shared
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def headline(ctx: Context) -> str:
    one_k = ctx.results.get("sizes", {}).get("one_k", {})
    times = ctx.results.get("codecs", {}).get("times", {})
    ref = one_k.get(REFERENCE, (0, 1))[0]
    head = ["1,000 topics", "bytes", f"x {REFERENCE}"] + [f"decode ms {c}" for c in times]
    rows = [[m, f"{b:,}", f"{b / ref:.2f}" if ref else "-"]
            + [f"{times[c][m]['decode'] * 1e3:.2f}" if m in times[c] else "-" for c in times]
            for m, (b, _) in one_k.items()]
    return grid(head, rows, markdown=False)


def report(ctx: Context) -> None:
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in ctx.timings.items())
    text = ("# kcodec showcase: what a client pays to learn a cluster's topics\n\n"
            f"Made by `make run` (`python -m kcodec showcase`) on {datetime.datetime.now():%Y-%m-%d %H:%M}. "
            f"Steps: {steps or '-'}.\n\n"
            "KIP-142 asks for a ListTopics request because a Metadata response for thousands of topics is large when "
            "a client only wants names; KIP-966's DescribeTopicPartitions pages the partitions instead. "
            "Bodies only (no size prefix or response header).\n\n"
            + ("```\n" + headline(ctx) + "```\n\n" if "sizes" in ctx.results else "")
            + "\n".join(ctx.sections)
            + ("\n## Skipped\n\n" + "\n".join(f"- {f}" for f in ctx.skipped) + "\n" if ctx.skipped else "")
            + ("\n## Failures\n\n" + "\n".join(f"- {f}" for f in ctx.failures) + "\n" if ctx.failures else ""))
    path = ctx.out_dir / "README.md"
    path.write_text(text)
    if "sizes" in ctx.results:
        print("\n" + headline(ctx), file=ctx.out, end="")
    figures = [os.path.relpath(p, ctx.out_dir) for p in ctx.files if p.suffix in (".png", ".svg")]
    print(f"\nreport: {path} (+ {', '.join(figures) or 'no figures'})",
          file=ctx.out)


