"""What the showcase's steps share: options, results so far, report sections, failures."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any, TextIO

from kcodec.cli.progress import Progress


class Skip(Exception):
    """A step cannot run here (a missing library or program, a step it needs that did not run): it says
    why and the job goes on; nothing is made up in its place."""


@dataclasses.dataclass
class Context:
    vectors: Path
    out_dir: Path
    topics: str = "10,100,1k,10k,100k"
    decode_max: str = "10k"
    repeat: int = 3
    quiet: bool = False
    master: str = "local[2]"
    verbose: bool = False  # Spark's own log lines on the console
    out: TextIO = dataclasses.field(default_factory=lambda: sys.stdout)  # the current one, not import-time
    results: dict[str, Any] = dataclasses.field(default_factory=dict)   # by step: what later steps read
    sections: list[str] = dataclasses.field(default_factory=list)       # Markdown, in step order
    files: list[Path] = dataclasses.field(default_factory=list)         # written into out_dir
    failures: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    timings: dict[str, float] = dataclasses.field(default_factory=dict)
    progress: Progress = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.progress = Progress(enabled=not self.quiet)
