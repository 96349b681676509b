"""Pairing responses with requests as Kafka defines it (what Spark's workers run per connection).

A broker answers the requests of one connection in the order it received them, each response
carrying its request's correlation id; a Produce request with acks=0 gets no answer at all. So, per
connection, in the order the frames crossed the wire (``position``), a response answers the earliest
request still waiting whose correlation id it carries, which in a healthy conversation is the oldest
waiting request. What departs from that is resolved as librdkafka does (it looks the id up among its
requests in flight) and counted:

- ``answered``: the response answers the oldest waiting request;
- ``overtaken``: a waiting request that a response to a later request passed (a mismatch: the broker
  skipped it or its answer was lost); it stays unanswered;
- ``no_response``: an acks=0 Produce request, unanswered as Kafka specifies;
- ``acks0_answered``: an acks=0 Produce request that got a response anyway (a broker that does this
  is wrong: Kafka's sends nothing, Tansu 0.6.0 answers);
- ``unanswered``: a request still waiting when the capture ends (or the connection closed);
- ``orphan``: a response whose correlation id no waiting request carries (its request was sent
  before the capture began, or was never captured).

Correlation ids may repeat on a connection (an int32 counter that wraps, clients that reuse ids):
matching the earliest waiting request keeps each id's uses apart.

A response can only follow its request, but a packet capture may write them the other way round
(tcpdump on loopback takes packets from several CPUs, and a request's last segment can land after the
first packets of its answer). So a response that matches nothing is held until the next response is
matched: a request with its correlation id that arrives meanwhile is paired with it (its latency is
then negative, as captured); what is still held then is an orphan.
"""

from __future__ import annotations

import collections
from typing import Iterator, Optional

ANSWERED, OVERTAKEN, NO_RESPONSE, ACKS0_ANSWERED, UNANSWERED, ORPHAN = (
    "answered", "overtaken", "no_response", "acks0_answered", "unanswered", "orphan")
STATUSES = (ANSWERED, OVERTAKEN, NO_RESPONSE, ACKS0_ANSWERED, UNANSWERED, ORPHAN)
MAX_WAITING = 100_000  # requests kept waiting per connection; older ones are let go (unanswered)
MAX_HELD = 1024  # responses held for a request captured after them; older ones are orphans
Pair = tuple[Optional[int], Optional[int], str]

class Pairer:
    """``pair``'s rule one frame at a time: ``request`` and ``response`` return the pairs (request
    position, response position, status) each completes, ``finish`` the rest. At most MAX_WAITING
    requests wait (older ones are let go as unanswered) and MAX_HELD responses are held (older ones
    become orphans), so a connection's state stays bounded."""

    def __init__(self) -> None:
        self.waiting: "collections.deque[tuple[int, Optional[int], bool]]" = collections.deque()  # (position, corr, expects)
        self.held: list[tuple[int, Optional[int]]] = []  # responses no waiting request matched, since the last match

    def request(self, position: int, corr: Optional[int], acks: Optional[int]) -> list[Pair]:
        held = self.held
        early = next((i for i, h in enumerate(held) if h[1] == corr), None) if corr is not None and held else None
        if early is not None:  # its answer was captured just before it (see the module's doc)
            return [(position, held.pop(early)[0], ANSWERED if acks != 0 else ACKS0_ANSWERED)]
        self.waiting.append((position, corr, acks != 0))
        if len(self.waiting) > MAX_WAITING:
            p, _, expects = self.waiting.popleft()
            return [(p, None, UNANSWERED if expects else NO_RESPONSE)]
        return []

    def response(self, position: int, corr: Optional[int]) -> list[Pair]:
        waiting = self.waiting
        match = None
        if corr is not None:
            match = 0 if waiting and waiting[0][1] == corr else next(
                (i for i, w in enumerate(waiting) if w[1] == corr), None)
        if match is None:
            self.held.append((position, corr))
            if len(self.held) > MAX_HELD:
                return [(None, self.held.pop(0)[0], ORPHAN)]
            return []
        out: list[Pair] = [(None, h, ORPHAN) for h, _ in self.held]
        self.held = []
        for _ in range(match):
            p, _, expects = waiting.popleft()
            out.append((p, None, OVERTAKEN if expects else NO_RESPONSE))
        p, _, expects = waiting.popleft()
        out.append((p, position, ANSWERED if expects else ACKS0_ANSWERED))
        return out

    def finish(self) -> list[Pair]:
        out: list[Pair] = [(None, h, ORPHAN) for h, _ in self.held]
        out.extend((p, None, UNANSWERED if expects else NO_RESPONSE) for p, _, expects in self.waiting)
        self.held, self.waiting = [], collections.deque()
        return out


def pair(rows: Iterator[tuple[int, int, Optional[int], Optional[int]]]) -> list[Pair]:
    """(request position, response position, status) for frames of one connection given in wire order
    as (position, direction, correlation id, acks): direction 0 a request, 1 a response."""
    p = Pairer()
    out: list[Pair] = []
    for position, direction, corr, acks in rows:
        out += p.request(position, corr, acks) if direction == 0 else p.response(position, corr)
    return out + p.finish()
