"""Which Apache Kafka release is this broker? A guess from the API ranges it advertises.

    from kcodec.versions import guess_release
    guess = guess_release(api_versions_response)   # or {api_key: (min, max)}
    guess.release, guess.exact, str(guess)         # "3.7", True, "3.7"

The table (``kafka_releases.tsv`` beside this file) holds, per release, the range of every API a
broker of that release advertises by default. A broker matches a release when every API both know
has the release's highest version and the broker advertises no API the release lacks; APIs the
release has but the broker does not advertise are allowed (KRaft brokers leave out ZooKeeper's
inter-broker APIs, and the reverse). KRaft-only APIs (those Kafka's 3.9 definitions give the
"broker" listener but not "zkBroker"; the table lists them) are left out when comparing with the
rows before 4.0, which are ZooKeeper-mode brokers. Releases with identical rows cannot be told
apart: the guess names the oldest and lists the others in ``same_as``. See docs/versions.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping, Optional, Union

from kcodec import definitions

Ranges = Mapping[int, tuple[int, int]]


@dataclass(frozen=True)
class Release:
    name: str                           # "0.10.0", "2.8", "4.3"
    apis: dict[int, tuple[int, int]]    # api key -> (min, max) advertised

    @property
    def key(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.name.split("."))


@dataclass
class ReleaseGuess:
    """The answer of ``guess_release``. ``str()`` says it in words."""

    release: str                  # the oldest release whose ranges match, else the closest ("": none)
    exact: bool                   # True: every comparable API matched ``release``
    same_as: list[str] = field(default_factory=list)     # later releases with the same ranges
    newer_than: bool = False      # the broker is past ``release`` (the newest known): "at least"
    differences: list[str] = field(default_factory=list)  # for an inexact guess: what differs
    at_least: Optional[str] = None  # the oldest release that has every API version the broker does

    def __str__(self) -> str:
        if not self.release:
            return "unknown: no API of an Apache Kafka release advertised"
        if self.exact:
            return self.release + (f" (or {', '.join(self.same_as)}: same API ranges)" if self.same_as else "")
        if self.newer_than:
            return f"newer than {self.release}"
        newest = f"; it uses API versions of {self.at_least} or later" if self.at_least else ""
        return (f"no release matches: closest {self.release} ({len(self.differences)} API ranges "
                f"differ){newest}")


def _parse_range(cell: str) -> tuple[int, int] | None:
    if cell == "-":
        return None
    lo, _, hi = cell.partition("-")
    return int(lo), int(hi)


@lru_cache(maxsize=1)
def _table() -> tuple[tuple[Release, ...], frozenset[int]]:
    text = resources.files(__name__).joinpath("kafka_releases.tsv").read_text(encoding="utf-8")
    lines = text.splitlines()
    kraft_only = frozenset(int(k) for line in lines if line.startswith("#! kraft-only")
                           for k in line.split()[2:])
    rows = [line.split("\t") for line in lines if line and not line.startswith("#")]
    head, body = rows[0], rows[1:]
    names = head[2:]
    apis: list[dict[int, tuple[int, int]]] = [{} for _ in names]
    for row in body:
        key = int(row[0])
        for i, cell in enumerate(row[2:]):
            r = _parse_range(cell)
            if r is not None:
                apis[i][key] = r
    out = sorted((Release(n, a) for n, a in zip(names, apis)), key=lambda r: r.key)
    return tuple(out), kraft_only


def releases() -> tuple[Release, ...]:
    """Every release in the table, oldest first."""
    return _table()[0]


def kraft_only_apis() -> frozenset[int]:
    """API keys a KRaft broker serves but a ZooKeeper-mode broker never did (from Kafka's listeners)."""
    return _table()[1]


@lru_cache(maxsize=1)
def known_apis() -> frozenset[int]:
    """API keys some release's default broker advertises. Others are left out of every comparison:
    APIs a broker offers only when configured (client telemetry, 71 and 72, with a metrics reporter),
    vendors' extensions, kcodec's own ListTopics, and APIs newer than the table."""
    return frozenset(k for r in releases() for k in r.apis)


def advertised(response: Union[Any, Ranges]) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) from an ApiVersionsResponse, or a mapping of the same."""
    try:
        if isinstance(response, Mapping):
            return {int(k): (int(v[0]), int(v[1])) for k, v in response.items()}
        return {int(a.api_key): (int(a.min_version), int(a.max_version)) for a in response.api_keys}
    except (AttributeError, TypeError, ValueError, IndexError) as e:
        raise TypeError(f"expected an ApiVersionsResponse or {{api_key: (min, max)}}, not "
                        f"{type(response).__name__}: {e}") from None


def _differences(theirs: dict[int, tuple[int, int]], release: Release) -> tuple[list[str], int, int]:
    """What differs between a broker's ranges and a release's: (descriptions, how many APIs the
    broker is behind on, how many it is ahead on)."""
    skip = set(kraft_only_apis()) if release.key < (4,) else set()
    skip |= {k for k in theirs if k not in known_apis()}
    names = definitions.api_keys()
    diffs, behind, ahead = [], 0, 0
    for key, (_, hi) in sorted(theirs.items()):
        if key in skip:
            continue
        name = names.get(key, f"api {key}")
        want = release.apis.get(key)
        if want is None:
            diffs.append(f"{name} advertised, not in {release.name}")
            ahead += 1
        elif hi != want[1]:
            diffs.append(f"{name} max v{hi}, {release.name} has v{want[1]}")
            behind += hi < want[1]
            ahead += hi > want[1]
    return diffs, behind, ahead


def guess_release(response: Union[Any, Ranges]) -> ReleaseGuess:
    """The oldest Apache Kafka release whose API ranges match ``response`` (an ApiVersionsResponse
    or {api key: (min, max)}); else the newest release the broker is entirely ahead of ("newer
    than"), else the release with the fewest differences (a broker that is not Apache Kafka)."""
    theirs = advertised(response)
    if not any(k in known_apis() for k in theirs):
        return ReleaseGuess("", False)
    table = releases()
    scored = [(r, *_differences(theirs, r)) for r in table]
    for i, (r, diffs, _, _) in enumerate(scored):
        if not diffs and any(k in r.apis for k in theirs):
            same = [o.name for o in table[i + 1:] if not _differences(theirs, o)[0]]
            return ReleaseGuess(r.name, True, same_as=same)
    newest, diffs, behind, _ = scored[-1]
    if behind == 0:
        return ReleaseGuess(newest.name, False, newer_than=True, differences=diffs)
    best = min(scored, key=lambda s: len(s[1]))  # the first (oldest) of the closest
    covering = [r.name for r, _, _, ahead in scored if ahead == 0]
    return ReleaseGuess(best[0].name, False, differences=best[1], at_least=covering[0] if covering else None)


def distinguishable(kraft: bool = False) -> list[list[str]]:
    """Releases grouped by identical highest versions: a guess tells the groups apart, not their
    members. ``kraft``: as KRaft brokers advertise them, without the ZooKeeper-only APIs (those a 4.0
    broker no longer has), which makes some neighbours identical."""
    keep = set(releases()[-1].apis) | kraft_only_apis() if kraft else None
    groups: list[list[str]] = []
    last: dict[int, int] | None = None
    for r in releases():
        maxes = {k: v[1] for k, v in r.apis.items() if keep is None or k in keep}
        if last is not None and maxes == last:
            groups[-1].append(r.name)
        else:
            groups.append([r.name])
        last = maxes
    return groups
