"""``kcodec-broker`` (and ``kcodec broker``, which hands its arguments here): a cluster of N brokers on
consecutive ports until interrupted."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from kcodec.security.tls import CLIENT_AUTH

if TYPE_CHECKING:
    from .cluster import Cluster
    from .context import ListenerRuntime
    from .groups import GroupSettings

LIST_TOPICS_ENV = "KCODEC_LIST_TOPICS_API_KEY"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--listen", action="append", metavar="[NAME=][PROTOCOL://]HOST:PORT",
                   help="the first broker's address (default 127.0.0.1:9092); the others take the next ports (port "
                        "0: ephemeral). Without a protocol the other options decide it; repeat with protocols "
                        "(PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) for several listeners, e.g. "
                        "--listen PLAINTEXT://127.0.0.1:9092 --listen SSL://127.0.0.1:9192; NAME= names one "
                        "(EXTERNAL=SASL_SSL://...). --tls-* apply to the TLS listeners, --user and "
                        "--sasl-mechanism to the SASL ones")
    p.add_argument("--brokers", type=int, default=1, help="how many advertised brokers (default 1)")
    p.add_argument("--advertise", metavar="HOST", help="the host clients are told (default: the listen host)")
    p.add_argument("--num-partitions", type=int, default=1, help="num.partitions (KIP-464 default)")
    p.add_argument("--default-replication-factor", type=int, default=1, help="default.replication.factor")
    p.add_argument("--no-auto-create", action="store_true", help="auto.create.topics.enable=false")
    p.add_argument("--auto-create-delay-ms", type=int, default=0, metavar="MS",
                   help="an auto-created topic appears this long after the Metadata that asks for it, as Kafka's "
                        "controller creates it a round trip later (default 0: at once)")
    p.add_argument("--state", type=Path, metavar="FILE",
                   help="keep topics (and reassignments in progress), configs, leaders and leader epochs, ACLs "
                        "created at run time and data "
                        "(FILE.data) here across restarts")
    p.add_argument("--user", action="append", default=[], metavar="NAME:PASSWORD",
                   help="a SASL user (repeat); any user turns SASL on with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 "
                        "(the broker keeps SCRAM credentials, not the password)")
    p.add_argument("--sasl-mechanism", action="append", metavar="NAME",
                   help="enable only these SASL mechanisms (repeat): PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
                        "OAUTHBEARER (unsecured JWS tokens; needs no --user)")
    p.add_argument("--reauth-ms", type=int, metavar="MS",
                   help="connections.max.reauth.ms (KIP-368): sessions end after this unless re-authenticated")
    p.add_argument("--oauth-scope", action="append", default=[], metavar="SCOPE",
                   help="a scope every OAUTHBEARER token must carry (repeat)")
    p.add_argument("--tls-cert", type=Path, metavar="FILE", help="PEM certificate (chain): SSL / SASL_SSL listeners")
    p.add_argument("--tls-key", type=Path, metavar="FILE", help="PEM private key of --tls-cert")
    p.add_argument("--tls-client-auth", choices=CLIENT_AUTH,
                   help="ssl.client.auth: ask TLS clients for no certificate (default), for one, or refuse those "
                        "without one; a client's principal is then User:<its certificate's subject DN> unless SASL "
                        "names it")
    p.add_argument("--tls-client-ca", type=Path, metavar="FILE",
                   help="PEM CA certificates that client certificates must chain to (with --tls-client-auth)")
    p.add_argument("--tls-principal-rules", metavar="RULES",
                   help="ssl.principal.mapping.rules for client certificates' DNs, e.g. "
                        "'RULE:^CN=([^,]*),.*$/$1/L,DEFAULT' (default DEFAULT: the whole DN)")
    p.add_argument("--acl", action="append", metavar="USER:OP:topic|group|transactional_id:NAME|USER:OP:cluster",
                   help="allow an operation (repeat); any ACL turns authorization on (CreateAcls and DeleteAcls "
                        "change the ACLs at run time); a TLS client's USER is "
                        "User:<subject DN>, e.g. User:CN=alice,O=example:Describe:topic:orders")
    p.add_argument("--authorizer", action="store_true",
                   help="turn authorization on even without --acl: ACLs then come from CreateAcls (with --state "
                        "they survive restarts) and only --super-user may do anything at first")
    p.add_argument("--super-user", action="append", default=[], metavar="NAME")
    p.add_argument("--allow-everyone-if-no-acl-found", action="store_true",
                   help="allow.everyone.if.no.acl.found: with the authorizer on, anyone may do anything on a "
                        "resource no ACL is about")
    p.add_argument("--list-topics-api-key", type=int, metavar="N",
                   help=f"ListTopics' api key (default 1142; same as {LIST_TOPICS_ENV})")
    p.add_argument("--rack", action="append", default=[], metavar="NODE=RACK",
                   help="advertise broker NODE in RACK (repeat)")
    p.add_argument("--replica-selector", metavar="CLASS",
                   help="replica.selector.class (KIP-392): org.apache.kafka.common.replica.RackAwareReplicaSelector "
                        "(or rack-aware) sends consumers with client.rack to an in-sync follower in their --rack; "
                        "LeaderSelector (leader) or none (the default, as Kafka) keeps them on leaders")
    p.add_argument("--controller-only-admin", action="store_true",
                   help="brokers other than the controller answer NOT_CONTROLLER to CreateTopics, DeleteTopics, "
                        "CreatePartitions, ElectLeaders and partition reassignments, as ZooKeeper-era Kafka did (default: any "
                        "broker takes them)")
    p.add_argument("--no-auto-leader-rebalance", action="store_true",
                   help="auto.leader.rebalance.enable=false: a restarted broker leads nothing until a preferred "
                        "leader election (ElectLeaders, kafka-leader-election.sh) moves leadership back")
    p.add_argument("--max-frame-size", type=int, default=8 * 1024 * 1024)
    p.add_argument("--sasl-max-receive-size", type=int, metavar="N",
                   help="the largest frame a SASL listener reads before the client has authenticated; a larger "
                        "one closes the connection (sasl.server.max.receive.size; default 524288)")
    p.add_argument("--max-partition-bytes", type=int, metavar="N",
                   help="a partition's bytes in memory at most (default 256 MiB); the oldest batches go first")
    p.add_argument("--producer-id-expiration-ms", type=int, metavar="MS",
                   help="a partition forgets a producer with no transaction open on it and no write for this long "
                        "(producer.id.expiration.ms; default 86400000, one day)")
    p.add_argument("--replica-lag-time-max-ms", type=int, metavar="MS",
                   help="a follower that stopped copying leaves the ISR after lagging this long "
                        "(replica.lag.time.max.ms; default 30000)")
    p.add_argument("--fetch-max-bytes", type=int, metavar="N",
                   help="the most record bytes one Fetch response carries (Kafka's broker fetch.max.bytes; "
                        "default 55 MiB)")
    p.add_argument("--client-telemetry", action="store_true",
                   help="offer GetTelemetrySubscriptions and PushTelemetry (KIP-714; off by default, as Kafka "
                        "offers them only with a reporter that receives client metrics)")
    p.add_argument("--telemetry-max-bytes", type=int, metavar="N",
                   help="the most metrics bytes one PushTelemetry may carry (KIP-714; Kafka's telemetry.max.bytes; "
                        "default 1 MiB)")
    p.add_argument("--group-setting", action="append", default=[], metavar="NAME=VALUE",
                   help="a consumer groups' setting (repeat): min_session_timeout_ms, max_session_timeout_ms, "
                        "initial_rebalance_delay_ms, max_size, consumer_session_timeout_ms, "
                        "consumer_heartbeat_interval_ms")
    p.add_argument("--transaction-max-timeout-ms", type=int, default=900_000, metavar="MS",
                   help="the longest transaction timeout a producer may ask for (transaction.max.timeout.ms; "
                        "default 900000)")
    p.add_argument("--transaction-version", type=int, choices=(1, 2), default=2,
                   help="the finalized transaction.version feature: 2 (default, as Kafka 4.x) bumps the epoch at "
                        "every EndTxn v5 (KIP-890), 1 keeps clients on transaction version 1")
    p.add_argument("--transaction-two-phase-commit", action="store_true",
                   help="serve InitProducerId v6: two-phase commit participants (KIP-939; Kafka's "
                        "transaction.two.phase.commit.enable)")
    p.add_argument("--transactional-id-expiration-ms", type=int, default=7 * 24 * 3600 * 1000, metavar="MS",
                   help="forget a transactional id with no transaction open and no change for this long "
                        "(transactional.id.expiration.ms; default 604800000, 7 days)")
    p.add_argument("--versions-file", type=Path, metavar="FILE",
                   help="on exit, write the API versions each client used here (JSON)")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="-v: log topic changes and closed connections; -vv: every request, its API and version")


def group_settings(items: list[str]) -> "GroupSettings":
    """``GroupSettings`` from NAME=VALUE items (integers); ValueError names a bad one."""
    import dataclasses

    from .groups import GroupSettings

    names = {f.name for f in dataclasses.fields(GroupSettings)}
    values = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or name not in names or not value.strip().lstrip("-").isdigit():
            raise ValueError(f"--group-setting {item!r}: expected NAME=INTEGER, NAME one of {', '.join(sorted(names))}")
        values[name] = int(value)
    return GroupSettings(**values)


def _given(value: "int | None", default: int) -> int:
    """An option's value, or its default when not given (0 is a value: the cluster refuses it)."""
    return default if value is None else value


def _describe(cluster: "Cluster", listener: "ListenerRuntime") -> str:
    """One listener for the start-up line: its bootstrap, protocol, mechanisms and client certificates."""
    mechanisms = listener.sasl_settings.mechanisms
    named = f"{listener.name}: " if listener.name != listener.security_protocol else ""
    return (f"bootstrap {cluster.bootstrap_for(listener.name)}, {named}{listener.security_protocol}"
            + (f" ({', '.join(mechanisms)})" if mechanisms else "")
            + (f", client certificates {listener.client_auth}" if listener.client_auth != "none" else ""))


def run(args: argparse.Namespace) -> int:
    if args.list_topics_api_key is not None:
        # The definitions read the key once, when they first load: set it before anything loads them.
        os.environ[LIST_TOPICS_ENV] = str(args.list_topics_api_key)
    import asyncio

    from kcodec import definitions

    from .cluster import Cluster
    from .context import DEFAULT_FETCH_MAX_BYTES, DEFAULT_SASL_MAX_RECEIVE_SIZE
    from .copies import DEFAULT_REPLICA_LAG_TIME_MAX_MS
    from .listeners import parse_listen
    from .log import DEFAULT_MAX_PARTITION_BYTES, DEFAULT_PRODUCER_ID_EXPIRATION_MS
    from .telemetry import DEFAULT_TELEMETRY_MAX_BYTES
    from .txn import TransactionSettings

    try:
        if args.list_topics_api_key is not None and definitions.list_topics_api_key() != args.list_topics_api_key:
            print("--list-topics-api-key: the definitions were loaded before it took effect", file=sys.stderr)
            return 2
        listens = [parse_listen(text) for text in args.listen or ["127.0.0.1:9092"]]
        if len(listens) > 1 and any(not lst.name for lst in listens):
            raise ValueError("with several --listen, each needs a protocol, e.g. SSL://127.0.0.1:9093")
        first = listens[0]
        listeners = listens if first.name else None  # None: the one listener the other options make
        if any(":" not in u for u in args.user):
            raise ValueError("--user takes NAME:PASSWORD")
        users = dict(u.split(":", 1) for u in args.user) if args.user else None
        if (args.tls_cert is None) != (args.tls_key is None):
            raise ValueError("--tls-cert and --tls-key go together")
        if listeners is None and args.tls_cert is None and (args.tls_client_auth or args.tls_client_ca
                                                             or args.tls_principal_rules):
            raise ValueError("--tls-client-auth, --tls-client-ca and --tls-principal-rules need --tls-cert and "
                             "--tls-key")
        racks = {}
        for item in args.rack:
            node, eq, rack = item.partition("=")
            if not eq or not node.strip().isdigit() or not rack:
                raise ValueError(f"--rack {item!r}: expected NODE=RACK, e.g. 1=eu-west-1a")
            racks[int(node)] = rack
        cluster = Cluster(args.brokers, host=first.host or "127.0.0.1", port=first.port, listeners=listeners,
                          advertised_host=args.advertise,
                          num_partitions=args.num_partitions, default_replication_factor=args.default_replication_factor,
                          auto_create_topics=not args.no_auto_create, users=users,
                          auto_create_delay_ms=args.auto_create_delay_ms,
                          acls=[] if args.authorizer and args.acl is None else args.acl,
                          super_users=args.super_user, state_file=args.state, max_frame_size=args.max_frame_size,
                          allow_everyone_if_no_acl_found=args.allow_everyone_if_no_acl_found,
                          sasl_max_receive_size=_given(args.sasl_max_receive_size, DEFAULT_SASL_MAX_RECEIVE_SIZE),
                          sasl_mechanisms=args.sasl_mechanism, reauth_ms=args.reauth_ms, oauth_scope=args.oauth_scope,
                          tls=(args.tls_cert, args.tls_key) if args.tls_cert is not None else None,
                          tls_client_auth=args.tls_client_auth, tls_client_ca=args.tls_client_ca,
                          tls_principal_rules=args.tls_principal_rules,
                          racks=racks, replica_selector=args.replica_selector,
                          forward_admin=not args.controller_only_admin,
                          auto_leader_rebalance=not args.no_auto_leader_rebalance,
                          max_partition_bytes=_given(args.max_partition_bytes, DEFAULT_MAX_PARTITION_BYTES),
                          producer_id_expiration_ms=_given(args.producer_id_expiration_ms,
                                                           DEFAULT_PRODUCER_ID_EXPIRATION_MS),
                          fetch_max_bytes=_given(args.fetch_max_bytes, DEFAULT_FETCH_MAX_BYTES),
                          replica_lag_time_max_ms=_given(args.replica_lag_time_max_ms,
                                                         DEFAULT_REPLICA_LAG_TIME_MAX_MS),
                          telemetry_max_bytes=_given(args.telemetry_max_bytes, DEFAULT_TELEMETRY_MAX_BYTES),
                          client_telemetry=args.client_telemetry,
                          groups=group_settings(args.group_setting),
                          transactions=TransactionSettings(max_timeout_ms=args.transaction_max_timeout_ms,
                                                           transaction_version=args.transaction_version,
                                                           two_phase_commit=args.transaction_two_phase_commit,
                                                           id_expiration_ms=args.transactional_id_expiration_ms))
    except ValueError as e:
        print(f"kcodec broker: {e}", file=sys.stderr)
        return 2
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")

    async def main() -> None:
        await cluster.start_async()
        print(f"kcodec broker: {len(cluster.servers)} broker(s), "
              + "; ".join(_describe(cluster, lst) for lst in cluster.servers[0].listeners)
              + f", cluster id {cluster.state.cluster_id}, ListTopics api key {definitions.list_topics_api_key()}",
              flush=True)
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):  # both end it cleanly (and write --versions-file)
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await cluster.stop_async()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    except OSError as e:
        print(f"kcodec broker: {e}", file=sys.stderr)
        return 1
    finally:
        if args.versions_file is not None:
            args.versions_file.write_text(json.dumps(cluster.api_versions_used(), indent=1) + "\n")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    """The ``kcodec-broker`` command (``python -m kcodec_broker``)."""
    parser = argparse.ArgumentParser(prog="kcodec-broker",
                                     description="an in-process Kafka cluster for tests, until interrupted")
    add_arguments(parser)
    return run(parser.parse_args(argv))
