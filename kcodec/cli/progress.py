"""Progress of long work on stderr: bars on a terminal, plain lines in logs and CI.

``kcodec sizes``, ``kcodec showcase`` (``make run``), ``kcodec analyze`` and the benchmarks' payload
making report through one ``Progress``. On a terminal a status line is rewritten in place and counted
work gets a bar (tqdm, when installed: the ``test``, ``spark`` and ``progress`` extras bring it);
elsewhere (a pipe, a log file, CI) the same events are plain lines, a few per bar, so logs stay short.
"""

from __future__ import annotations

import sys
from typing import Any, Optional, TextIO


def _tqdm() -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # bars need tqdm; without it a terminal gets the status line alone
        return None
    return tqdm


class Bar:
    """Counted work: ``update(n)`` adds, ``to(done)`` sets. A context manager; closing prints the total."""

    def __init__(self, progress: "Progress", total: int, desc: str, unit: str) -> None:
        self.progress, self.total, self.desc, self.unit = progress, total, desc, unit
        self.done = 0
        self._quarter = 0  # plain lines: at 25 %, 50 %, 75 %, and the end
        tqdm = _tqdm() if progress.enabled and progress.tty else None
        self._bar = (tqdm(total=total, desc=desc, unit=unit, file=progress.stream, leave=False,
                          dynamic_ncols=True, unit_scale=total >= 10_000) if tqdm else None)

    def update(self, n: int = 1) -> None:
        self.to(self.done + n)

    def to(self, done: int) -> None:
        step, self.done = done - self.done, done
        if self._bar is not None:
            self._bar.update(step)
        elif self.total and done * 4 // self.total > self._quarter and done < self.total:
            self._quarter = done * 4 // self.total
            self.progress.say(f"{self.desc}: {done:,}/{self.total:,} {self.unit}", keep=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self.progress.say(f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}, done", keep=True)

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Progress:
    """One status line on ``stream`` (stderr): rewritten in place on a terminal, a line per stage
    otherwise; ``bar()`` for counted work. ``enabled=False`` prints nothing."""

    def __init__(self, stream: Optional[TextIO] = None, enabled: bool = True):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self._last = ""

    def say(self, text: str, keep: bool = False) -> None:
        """A status: on a terminal it replaces the previous one (``keep`` leaves it on screen); in a log,
        a line when the stage (the text before ':') changes, or when ``keep`` or it ends with 'done'."""
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\x1b[K" + text + ("\n" if keep else ""))
        elif keep or text.split(":")[0] != self._last.split(":")[0] or text.endswith("done"):
            self.stream.write(text + "\n")
        self._last = "" if keep and self.tty else text
        self.stream.flush()

    def bar(self, total: int, desc: str, unit: str = "") -> Bar:
        return Bar(self, total, desc, unit)

    def close(self) -> None:
        if self.enabled and self.tty and self._last:
            self.stream.write("\n")
            self.stream.flush()
        self._last = ""
