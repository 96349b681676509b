"""The compiled backend's deallocator for message objects (kcodec/core/_fast_dealloc.pxi): the generated classes a
decode prepares free their instances with it, and CPython's semantics stay (every slot's reference dropped,
the collector, pickling, subclasses, deep nesting), whichever backend decodes."""

from __future__ import annotations

import copy
import gc
import pickle
import sys
import weakref

import pytest
from needs import need_extension

import kcodec
from kcodec.core.backend import available
from kcodec.core.ir import program_for
from kcodec.messages import MetadataRequest, MetadataResponse

fast = available().get("cython")


@pytest.fixture(autouse=True)
def _adopted() -> None:
    """Prepares the compiled v12 programs, which adopts their classes (under KCODEC_PURE=1 too)."""
    need_extension(fast, "the compiled backend (kcodec.core._fast)")
    for cls in (MetadataResponse, MetadataRequest):
        fast.decode(program_for(cls, 12), kcodec.encode(cls(), 12))


class Token:
    """A value whose references can be counted."""


def _response(topics: int, partitions: int = 3) -> MetadataResponse:
    return MetadataResponse(topics=[MetadataResponse.Topic(name=f"t{i}", partitions=[
        MetadataResponse.Partition(partition_index=p, replica_nodes=[1, 2], isr_nodes=[1]) for p in range(partitions)])
        for i in range(topics)])


def test_a_decoded_message_s_classes_are_adopted() -> None:
    for cls in (MetadataResponse, MetadataResponse.Topic, MetadataResponse.Partition, MetadataRequest.Topic):
        assert fast.adopted(cls), cls
    assert not fast.adopted(int) and not fast.adopted(Token)


def test_freeing_drops_every_slot_s_reference() -> None:
    value = Token()
    before = sys.getrefcount(value)
    msg = _response(2)
    for topic in msg.topics:
        topic.name = value  # type: ignore[assignment]
        for p in topic.partitions:
            p.replica_nodes = value  # type: ignore[assignment]
            p.unknown_tagged_fields = value  # type: ignore[assignment]
    msg.throttle_time_ms = value  # type: ignore[assignment]
    assert sys.getrefcount(value) == before + 2 + 2 * 3 * 2 + 1
    del msg, topic, p
    assert sys.getrefcount(value) == before


def test_decoded_built_and_copied_objects_stay_ordinary_objects() -> None:
    data = kcodec.encode(_response(20), 12)
    for _ in range(3):
        msg = kcodec.decode(MetadataResponse, data, 12)
        assert msg == _response(20)
        for twin in (copy.copy(msg), copy.deepcopy(msg), pickle.loads(pickle.dumps(msg))):
            assert twin == msg and type(twin) is MetadataResponse
        msg.topics[0].name = "renamed"
        msg.topics[0].partitions[0].leader_id = 7
        assert kcodec.decode(MetadataResponse, kcodec.encode(msg, 12), 12) == msg
        with pytest.raises(AttributeError):
            msg.not_a_field = 1  # still slots only
        del msg


def test_cycles_through_adopted_objects_are_collected() -> None:
    gc.collect()

    class Witness(list):
        freed = 0

        def __del__(self) -> None:
            Witness.freed += 1

    for _ in range(100):
        topic = MetadataResponse.Topic(name="cycle")
        topic.partitions = Witness([topic])  # topic -> partitions -> topic
    del topic
    gc.collect()
    assert Witness.freed == 100


def test_a_python_subclass_frees_its_own_slots_and_the_adopted_class_s() -> None:
    class Annotated(MetadataRequest):
        __slots__ = ("note", "__weakref__")

    class WithDict(MetadataRequest):
        pass

    for cls in (Annotated, WithDict):
        assert not fast.adopted(cls)  # CPython's deallocator, which calls kcodec's for the base's slots
    value = Token()
    before = sys.getrefcount(value)
    plain = kcodec.encode(MetadataRequest(topics=[MetadataRequest.Topic(name="x")]), 12)
    for _ in range(100):
        a = Annotated(topics=[MetadataRequest.Topic(name="x")])
        a.note = value
        a.allow_auto_topic_creation = value  # type: ignore[assignment]
        w = WithDict(topics=[MetadataRequest.Topic(name="x")])
        w.extra = value
        w.unknown_tagged_fields = value  # type: ignore[assignment]
        ref = weakref.ref(a)
        a.allow_auto_topic_creation = True
        w.unknown_tagged_fields = None
        assert kcodec.encode(a, 12) == kcodec.encode(w, 12) == plain
        a.allow_auto_topic_creation = value  # type: ignore[assignment]
        del a, w
        assert ref() is None
    assert sys.getrefcount(value) == before
    with pytest.raises(TypeError):  # the deallocators differ: CPython refuses the swap
        MetadataRequest().__class__ = Annotated


def test_a_deep_chain_of_nested_objects_frees_without_exhausting_the_stack() -> None:
    head = MetadataResponse.Topic(name="0")
    for i in range(200_000):  # no Kafka message nests so, but Python lets a user build it
        head = MetadataResponse.Topic(name=str(i), partitions=head)  # type: ignore[arg-type]
    del head  # the trashcan bounds the recursion, as for CPython's own containers


def test_a_request_s_topics_decode_and_free_as_before() -> None:
    req = MetadataRequest(topics=[MetadataRequest.Topic(name=f"topic-{i}") for i in range(1000)])
    data = kcodec.encode(req, 12)
    for _ in range(3):
        got = kcodec.decode(MetadataRequest, data, 12)
        assert got == req and fast.adopted(type(got.topics[0]))
        del got
