"""``kcodec topics list|describe|create|delete|add-partitions|cluster --bootstrap HOST:PORT [--json]``.

Exit status: 0 when every topic succeeded, 1 when any topic has an error (shown per topic), 2 when
the cluster could not be reached or the request failed as a whole.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional, Sequence

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")  # kcodec.client.sasl's, not imported:
# `kcodec --help` must not load the client


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bootstrap", required=True, metavar="HOST:PORT[,HOST:PORT]")
    common.add_argument("--sasl-user", metavar="U")
    common.add_argument("--sasl-password", metavar="P")
    common.add_argument("--sasl-mechanism", metavar="M", choices=MECHANISMS,
                        help="PLAIN (default with --sasl-user), SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER "
                             "(--sasl-token-file, else an unsecured token for --sasl-user)")
    common.add_argument("--sasl-token-file", metavar="FILE", help="OAUTHBEARER: a file holding the token")
    common.add_argument("--tls", action="store_true", help="connect over TLS, trusting the system's CAs")
    common.add_argument("--tls-ca", metavar="FILE", help="connect over TLS, trusting the CA certificates in FILE")
    common.add_argument("--tls-no-hostname-check", action="store_true",
                        help="accept a certificate that does not name the broker's host (still verified)")
    common.add_argument("--tls-cert", metavar="FILE",
                        help="present this client certificate (PEM chain) to brokers that ask for one (mutual TLS)")
    common.add_argument("--tls-key", metavar="FILE", help="the PEM private key of --tls-cert (if not in its file)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument("--timeout", type=float, default=30.0,
                        help="seconds each call may take, retries included (default 30)")
    common.add_argument("--list-topics-api-key", type=int, metavar="KEY",
                        help="api key the broker serves ListTopics (KIP-142) under")
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("list", parents=[common], help="topic names (ListTopics, else Metadata)")
    p.add_argument("--internal", action="store_true", help="include internal topics")
    p = sub.add_parser("describe", parents=[common], help="partitions, leaders, replicas (all topics if none named)")
    p.add_argument("topics", nargs="*")
    p.add_argument("--configs", action="store_true", help="also the topics' configs (DescribeConfigs)")
    p = sub.add_parser("create", parents=[common], help="create topics (broker defaults when omitted, KIP-464)")
    p.add_argument("topics", nargs="+")
    p.add_argument("--partitions", type=int)
    p.add_argument("--replication-factor", type=int)
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--validate-only", action="store_true")
    p = sub.add_parser("delete", parents=[common], help="delete topics")
    p.add_argument("topics", nargs="+")
    p = sub.add_parser("add-partitions", parents=[common], help="grow topics to a total partition count")
    p.add_argument("topics", nargs="+")
    p.add_argument("--count", type=int, required=True, help="the new total number of partitions")
    sub.add_parser("cluster", parents=[common],
                   help="cluster id, controller, brokers and racks, advertised APIs, the guessed Kafka release")


def run(args: argparse.Namespace, out: Any = None) -> int:
    from .errors import ClientError
    from .sync import SyncClient

    out = out or sys.stdout
    try:
        sasl = _sasl(args)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    configs = {}
    for item in getattr(args, "config", []):
        key, eq, value = item.partition("=")
        if not eq:
            print(f"error: --config {item!r}: expected KEY=VALUE", file=sys.stderr)
            return 2
        configs[key] = value
    try:
        tls = args.tls_ca if args.tls_ca is not None else (True if args.tls else None)
        if tls is None and (args.tls_cert is not None or args.tls_key is not None):
            raise ValueError("--tls-cert and --tls-key need --tls-ca FILE or --tls")
        client = SyncClient(args.bootstrap, sasl=sasl, tls=tls, tls_check_hostname=not args.tls_no_hostname_check,
                            tls_cert=args.tls_cert, tls_key=args.tls_key,
                            timeout=args.timeout, request_timeout=args.timeout,
                            connect_timeout=min(args.timeout, 10.0),
                            list_topics_api_key=args.list_topics_api_key)
        with client:
            return _act(client, args, configs, out)
    except (ClientError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _sasl(args: argparse.Namespace) -> Any:
    from .sasl import Sasl

    mechanism = args.sasl_mechanism
    if mechanism is None and args.sasl_user is None and args.sasl_password is None:
        return None
    if mechanism == "OAUTHBEARER":
        if args.sasl_token_file is not None:
            with open(args.sasl_token_file, encoding="utf-8") as f:
                return Sasl("OAUTHBEARER", args.sasl_user, token=f.read().strip())
        return Sasl("OAUTHBEARER", args.sasl_user)
    if args.sasl_token_file is not None:
        raise ValueError("--sasl-token-file is for --sasl-mechanism OAUTHBEARER")
    if args.sasl_user is None or args.sasl_password is None:
        raise ValueError("--sasl-user and --sasl-password go together")
    return Sasl(mechanism or "PLAIN", args.sasl_user, args.sasl_password)


def _act(client: Any, args: argparse.Namespace, configs: dict[str, str], out: Any) -> int:
    from .results import NewTopic, as_json

    if args.action == "cluster":
        _cluster(client.describe_cluster(), args.json, out)
        return 0
    if args.action == "list":
        listing = client.list_topics(internal=args.internal)
        if args.json:
            print(json.dumps(as_json(listing), indent=2), file=out)
        else:
            _table(["TOPIC", "INTERNAL"], [[t.name, "yes" if t.internal else ""] for t in listing], out)
        return 0
    if args.action == "describe":
        described = client.describe_topics(args.topics or None)
        config_of = {}
        if args.configs:
            config_of = {c.name: c for c in client.describe_configs([d.name for d in described if d.ok])}
        if args.json:
            data = as_json(described)
            for d in data:
                if d["name"] in config_of:
                    d["configs"] = as_json(config_of[d["name"]].configs)
            print(json.dumps(data, indent=2), file=out)
        else:
            _describe_table(described, config_of, out)
        return 0 if all(d.ok for d in described) else 1
    if args.action == "create":
        new = [NewTopic(n, args.partitions, args.replication_factor, configs) for n in args.topics]
        results = client.create_topics(new, validate_only=args.validate_only)
        rows = [[r.name, r.error.name, _or_dash(r.partitions), _or_dash(r.replication_factor),
                 r.message or ""] for r in results]
        return _report(results, ["TOPIC", "RESULT", "PARTITIONS", "RF", "MESSAGE"], rows, args.json, out)
    if args.action == "delete":
        results = client.delete_topics(args.topics)
    else:
        results = client.create_partitions({n: args.count for n in args.topics})
    rows = [[r.name, r.error.name, r.message or ""] for r in results]
    return _report(results, ["TOPIC", "RESULT", "MESSAGE"], rows, args.json, out)


def _report(results: Sequence[Any], head: list[str], rows: list[list[str]], as_json_out: bool, out: Any) -> int:
    from .results import as_json

    if as_json_out:
        print(json.dumps(as_json(list(results)), indent=2), file=out)
    else:
        _table(head, rows, out)
    return 0 if all(r.ok for r in results) else 1


def _describe_table(described: Sequence[Any], config_of: dict[str, Any], out: Any) -> None:
    rows = []
    for d in described:
        if not d.ok:
            rows.append([d.name, "", "", "", "", d.error.name])
            continue
        for p in d.partitions:
            rows.append([d.name, str(p.partition), str(p.leader), ",".join(map(str, p.replicas)),
                         ",".join(map(str, p.isr)), "" if p.error.name == "NONE" else p.error.name])
        if not d.partitions:
            rows.append([d.name, "", "", "", "", "no partitions"])
    _table(["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "ERROR"], rows, out)
    for name, c in config_of.items():
        print(f"\nconfigs of {name}" + (f": {c.error.name}" if not c.ok else ""), file=out)
        _table(["KEY", "VALUE", "SOURCE"], [[e.name, "(sensitive)" if e.sensitive else str(e.value),
                                              "default" if e.default else str(e.source)]
                                             for e in sorted(c.configs.values(), key=lambda e: e.name)], out)


def _cluster(desc: Any, as_json_out: bool, out: Any) -> None:
    from .results import as_json

    if as_json_out:
        print(json.dumps(as_json(desc), indent=2), file=out)
        return
    guessed = desc.release if desc.release_exact else f"{desc.release} (no release matches exactly)"
    _table(["CLUSTER", "CONTROLLER", "KAFKA RELEASE (guessed from the API ranges)"],
           [[desc.cluster_id or "-", _or_dash(desc.controller), guessed]], out)
    print(file=out)
    _table(["BROKER", "HOST", "PORT", "RACK"],
           [[str(b.node_id), b.host, str(b.port), b.rack or "-"] for b in desc.brokers], out)
    print(file=out)
    _table(["API KEY", "API", "MIN", "MAX"],
           [[str(a.api_key), a.name, str(a.min_version), str(a.max_version)] for a in desc.apis], out)


def _or_dash(value: Optional[int]) -> str:
    return "-" if value is None else str(value)


def _table(head: list[str], rows: list[list[str]], out: Any) -> None:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    lines = [head, ["-" * w for w in widths], *rows]
    for line in lines:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip(), file=out)
