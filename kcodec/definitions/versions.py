"""Version ranges as Kafka's message definitions spell them: "3", "0-12", "9+", "none"."""

from __future__ import annotations

from typing import Iterable, NamedTuple

OPEN = 0x7FFF  # Kafka's Short.MAX_VALUE: "3+" means 3..OPEN


class VersionRange(NamedTuple):
    lo: int
    hi: int  # inclusive; OPEN when open-ended

    @classmethod
    def parse(cls, text: str | None) -> "VersionRange":
        if text is None or text == "none":
            return NONE
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), OPEN)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.hi == OPEN

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    def intersect(self, other: "VersionRange") -> "VersionRange":
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return VersionRange(lo, hi) if lo <= hi else NONE

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == OPEN:
            return f"{self.lo}+"
        if self.lo == self.hi:
            return str(self.lo)
        return f"{self.lo}-{self.hi}"

    @classmethod
    def of_set(cls, versions: Iterable[int], max_version: int) -> "VersionRange":
        """The contiguous range covering `versions`, open-ended when it reaches max_version."""
        vs = sorted(set(versions))
        if not vs:
            return NONE
        if vs != list(range(vs[0], vs[-1] + 1)):
            raise ValueError(f"versions {vs} are not contiguous")
        return cls(vs[0], OPEN if vs[-1] >= max_version else vs[-1])


NONE = VersionRange(1, 0)
