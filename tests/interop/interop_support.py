"""What the interop tests share: the users and ACLs of the secured cluster, the API-version record."""

from __future__ import annotations

import json
from pathlib import Path

from kcodec.broker import Cluster

REPORT = Path(__file__).resolve().parents[2] / "report" / "broker-interop-versions.json"
USERS = {"admin": "admin-pw", "alice": "alice-pw"}
# alice may see every topic and its configs; she may create and delete none.
ACLS = ["alice:Describe:topic:*", "alice:DescribeConfigs:topic:*"]

_USED: dict[str, dict[str, set[int]]] = {}


def record(client: str, cluster: Cluster) -> dict[str, list[int]]:
    """Merge what ``cluster`` saw into the session's record under ``client``; returns the merge."""
    mine = _USED.setdefault(client, {})
    for apis in cluster.api_versions_used().values():
        for api, versions in apis.items():
            mine.setdefault(api, set()).update(versions)
    return {api: sorted(v) for api, v in mine.items()}


def write_report() -> None:
    if _USED:
        REPORT.parent.mkdir(exist_ok=True)
        data = {c: {a: sorted(v) for a, v in sorted(apis.items())} for c, apis in sorted(_USED.items())}
        REPORT.write_text("{\n" + ",\n".join(f" {json.dumps(c)}: {json.dumps(a)}" for c, a in data.items()) + "\n}\n")
