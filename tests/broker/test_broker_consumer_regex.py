"""KIP-848 regex subscriptions (SubscribedTopicRegex) over the wire: the coordinator resolves a member's
regex against the cluster's topics (whole names, internal topics included), re-resolves it as topics
appear and go (each change bumps the group epoch), adds it to the member's names, refuses an invalid
pattern with INVALID_REGULAR_EXPRESSION, and ConsumerGroupDescribe reports it."""

from __future__ import annotations

from typing import Any

from broker_wire import authenticated
from test_broker_consumer_groups import cluster, hb  # noqa: F401 - the fixture
from test_broker_groups import at_coordinator

from kcodec_broker import Cluster
from kcodec.errors import ErrorCode as E
from kcodec.messages import ConsumerGroupDescribeRequest


def by_topic(resp: Any, cluster: Any) -> dict[str, set[int]]:
    names = {t.topic_id: name for name, t in cluster.topics().items()}
    return {names[tp.topic_id]: set(tp.partitions) for tp in resp.assignment.topic_partitions}


def owned(assignment: dict[str, set[int]], cluster: Any) -> dict:
    topics = cluster.topics()
    return {topics[name].topic_id: ps for name, ps in assignment.items()}


def test_a_regex_member_gets_the_matching_topics_and_follows_creation_and_deletion(cluster):
    cluster.create_topic("orders-eu", 2)
    cluster.create_topic("payments", 3)
    cluster.create_topic("xorders", 1)  # "orders.*" must match the whole name
    with at_coordinator(cluster, "g") as w:
        a = hb(w, "member-a", 0, regex="orders.*")
        assert a.error_code == 0
        assert by_topic(a, cluster) == {"orders": {0, 1, 2, 3}, "orders-eu": {0, 1}}
        cluster.create_topic("orders-us", 2)  # a new topic that matches: a new group epoch
        a2 = hb(w, "member-a", a.member_epoch, owned=owned(by_topic(a, cluster), cluster))
        assert a2.member_epoch > a.member_epoch
        assert by_topic(a2, cluster) == {"orders": {0, 1, 2, 3}, "orders-eu": {0, 1}, "orders-us": {0, 1}}
        cluster.create_topic("other", 2)  # one that does not: nothing changes
        a3 = hb(w, "member-a", a2.member_epoch, owned=owned(by_topic(a2, cluster), cluster))
        assert a3.member_epoch == a2.member_epoch and a3.assignment is None
        with cluster.state.lock:
            cluster.state.delete_topic(cluster.state.topics["orders-eu"])
        a4 = hb(w, "member-a", a3.member_epoch)  # told to give up the deleted topic's partitions first
        assert a4.member_epoch == a3.member_epoch
        assert by_topic(a4, cluster) == {"orders": {0, 1, 2, 3}, "orders-us": {0, 1}}
        a5 = hb(w, "member-a", a4.member_epoch, owned=owned(by_topic(a4, cluster), cluster))
        assert a5.member_epoch > a4.member_epoch and a5.assignment is None  # released: the new epoch


def test_a_regex_matches_internal_topics_too(cluster):
    """As Kafka's coordinator (franz-go's Test848RegexBrokerResolves relies on it): only the ACLs filter."""
    with at_coordinator(cluster, "g") as w:
        a = hb(w, "member-a", 0, regex="__consumer_.*|orders")
        assert by_topic(a, cluster) == {"__consumer_offsets": set(range(7)), "orders": {0, 1, 2, 3}}


def test_regex_and_names_together_shared_with_a_names_member(cluster):
    cluster.create_topic("payments", 2)
    with at_coordinator(cluster, "g") as w:
        a = hb(w, "member-a", 0, ["payments"], regex="[a-z].*")  # every topic but __consumer_offsets & co.
        assert by_topic(a, cluster) == {"orders": {0, 1, 2, 3}, "payments": {0, 1}}
        b = hb(w, "member-b", 0, ["orders"], regex="pay.*")
        assert b.error_code == 0 and by_topic(b, cluster) == {}  # its share is still a's
        a2 = hb(w, "member-a", a.member_epoch, owned=owned(by_topic(a, cluster), cluster))
        assert by_topic(a2, cluster) == {"orders": {0, 1}, "payments": {0}}  # it gives up b's share
        a3 = hb(w, "member-a", a2.member_epoch, owned=owned(by_topic(a2, cluster), cluster))
        assert a3.member_epoch == b.member_epoch
        assert by_topic(hb(w, "member-b", b.member_epoch, owned={}), cluster) == {"orders": {2, 3}, "payments": {1}}
        described = w.call(ConsumerGroupDescribeRequest(group_ids=["g"]), 0).groups[0]
        assert {m.member_id: (m.subscribed_topic_names, m.subscribed_topic_regex) for m in described.members} == {
            "member-a": (("payments",), "[a-z].*"), "member-b": (("orders",), "pay.*")}
        b2 = hb(w, "member-b", b.member_epoch, regex="")  # an empty regex: names only from now on
        assert by_topic(b2, cluster) == {"orders": {2, 3}}  # payments 1 is to be given up
        after = w.call(ConsumerGroupDescribeRequest(group_ids=["g"]), 0).groups[0]
        assert after.group_epoch > described.group_epoch
        assert {m.member_id: m.subscribed_topic_regex for m in after.members}["member-b"] is None


def test_an_invalid_regex_is_refused(cluster):
    with at_coordinator(cluster, "g") as w:
        for bad in ("orders[", "(a)\\1", "(?=orders).*"):  # a syntax error; backtracking RE2 lacks
            r = hb(w, "member-a", 0, regex=bad)
            assert r.error_code == E.INVALID_REGULAR_EXPRESSION and bad in r.error_message
        assert hb(w, "member-a", 0, regex="").error_code == E.INVALID_REQUEST  # neither names nor a regex
        a = hb(w, "member-a", 0, regex="ord.rs")
        assert a.error_code == 0 and by_topic(a, cluster) == {"orders": {0, 1, 2, 3}}
        assert hb(w, "member-a", a.member_epoch, regex="(").error_code == E.INVALID_REGULAR_EXPRESSION
        assert hb(w, "member-a", a.member_epoch).error_code == 0  # the member keeps its regex


def test_a_pathological_regex_answers_at_once(cluster):
    # RE2 matches in linear time: a backtracking engine (Python's re) takes ~2**200 steps on (a+)+b against
    # this name, holding the GIL: the in-process broker, and this test with it, never answer (checked)
    cluster.create_topic("a" * 200, 1)
    with at_coordinator(cluster, "g") as w:
        r = hb(w, "member-a", 0, regex="(a+)+b")
        assert r.error_code == 0 and by_topic(r, cluster) == {}
        r = hb(w, "member-a", r.member_epoch, regex="(a+)+(a|aa)*")
        assert r.error_code == 0 and by_topic(r, cluster) == {"a" * 200: {0}}


def test_a_regex_matches_only_the_topics_the_member_may_describe():
    with Cluster(brokers=1, users={"alice": "alice-pw"}, system_topic_partitions=1,
                 acls=["alice:Read:group:g", "alice:Describe:topic:team-*"]) as c:
        for name in ("team-a", "team-b", "secret"):
            c.create_topic(name, 1)
        with authenticated(c, "alice", "alice-pw") as w:
            a = hb(w, "member-a", 0, regex=".*")
            assert a.error_code == 0 and by_topic(a, c) == {"team-a": {0}, "team-b": {0}}
            c.create_topic("secret-2", 1)
            c.create_topic("team-c", 1)
            a2 = hb(w, "member-a", a.member_epoch, owned=owned(by_topic(a, c), c))
            assert by_topic(a2, c) == {"team-a": {0}, "team-b": {0}, "team-c": {0}}


def test_heartbeats_list_the_topics_only_after_a_topic_changed(cluster, monkeypatch):
    """A pattern's resolution is kept until a topic is created or deleted: the heartbeats in between do not
    match it against every topic again (each such pass is O(topics))."""
    from kcodec_broker.groups import consumer

    passes: list[str] = []

    def counted(pattern, names):
        passes.append(pattern)
        return matching(pattern, names)

    matching = consumer.matching
    monkeypatch.setattr(consumer, "matching", counted)
    cluster.create_topic("orders-eu", 2)
    with at_coordinator(cluster, "g") as w:
        a = hb(w, "member-a", 0, regex="orders.*")
        b = hb(w, "member-b", 0, regex="orders.*")
        for _ in range(5):
            a = hb(w, "member-a", a.member_epoch)
        assert passes == ["orders.*"] and b.error_code == 0
        cluster.create_topic("orders-us", 1)
        a = hb(w, "member-a", a.member_epoch)
        assert passes == ["orders.*"] * 2  # (that the new topic is then assigned: the first test)
        with cluster.state.lock:
            cluster.state.delete_topic(cluster.state.topics["orders-us"])
        hb(w, "member-a", a.member_epoch)
        assert len(passes) == 3
