"""The compiled backend's free lists for message objects (kcodec/_fast_alloc.pxi): generated classes that a
decode prepares allocate from them and free into them, with CPython's semantics kept (the collector, pickling,
subclasses, deep nesting), and the memory they keep is bounded and can be given back."""

from __future__ import annotations

import copy
import gc
import pickle
import sys

import pytest
from needs import need_extension

import kcodec
from kcodec._backend import available
from kcodec.ir import program_for
from kcodec.messages import MetadataRequest, MetadataResponse

fast = available().get("cython")


@pytest.fixture(autouse=True)
def _compiled() -> None:
    need_extension(fast, "the compiled backend (kcodec._fast)")


def _response(topics: int, partitions: int = 3) -> MetadataResponse:
    return MetadataResponse(topics=[MetadataResponse.Topic(name=f"t{i}", partitions=[
        MetadataResponse.Partition(partition_index=p, replica_nodes=[1, 2], isr_nodes=[1]) for p in range(partitions)])
        for i in range(topics)])


def _adopted() -> tuple[type, ...]:
    """Prepares the compiled v12 programs (which adopts their classes), whichever backend kcodec.decode runs:
    once adopted, a class allocates from the lists under the reference too (KCODEC_PURE=1)."""
    for cls in (MetadataResponse, MetadataRequest):
        fast.decode(program_for(cls, 12), kcodec.encode(cls(), 12))
    return MetadataResponse, MetadataResponse.Topic, MetadataResponse.Partition


def test_a_decoded_message_s_classes_allocate_from_the_free_lists() -> None:
    for cls in _adopted():
        assert fast.pooled(cls), cls
    assert not fast.pooled(int)


def test_freed_objects_blocks_are_reused_by_the_next_decode() -> None:
    _adopted()
    data = kcodec.encode(_response(50), 12)
    fast.release_free_objects()
    assert fast.free_object_bytes() == 0
    first = kcodec.decode(MetadataResponse, data, 12)
    def blocks(msg: MetadataResponse) -> set[int]:
        return {id(msg)} | {id(t) for t in msg.topics} | {id(p) for t in msg.topics for p in t.partitions}

    addresses = blocks(first)
    del first
    kept = fast.free_object_bytes()
    size = sys.getsizeof  # an object's block: its GC header and its slots
    assert kept == (150 * size(MetadataResponse.Partition()) + 50 * size(MetadataResponse.Topic())
                    + size(MetadataResponse()))
    again = kcodec.decode(MetadataResponse, data, 12)
    assert blocks(again) == addresses  # the same blocks (objects of one size may swap theirs)
    assert fast.free_object_bytes() == 0
    assert again == _response(50)


def test_the_memory_kept_is_bounded_and_given_back() -> None:
    _adopted()
    data = kcodec.encode(_response(3000, 10), 12)  # 30,000 partitions: more than 2 MiB of one size
    kcodec.decode(MetadataResponse, data, 12)
    kept = fast.free_object_bytes()
    assert 2 << 20 <= kept <= 8 << 20, kept
    assert kcodec.release_memory() == kept
    assert fast.free_object_bytes() == 0 and kcodec.release_memory() == 0


def test_objects_built_or_copied_use_the_same_lists_and_stay_ordinary_objects() -> None:
    _adopted()
    fast.release_free_objects()
    built = _response(20)
    del built
    assert fast.free_object_bytes() > 0  # constructors allocate from the lists too (object.__new__)
    msg = _response(20)
    assert fast.free_object_bytes() == 0
    for twin in (copy.copy(msg), copy.deepcopy(msg), pickle.loads(pickle.dumps(msg))):
        assert twin == msg and type(twin) is MetadataResponse
    msg.topics[0].name = "renamed"
    msg.topics[0].partitions[0].leader_id = 7
    assert kcodec.decode(MetadataResponse, kcodec.encode(msg, 12), 12) == msg
    with pytest.raises(AttributeError):
        msg.not_a_field = 1  # still slots only


def test_cycles_through_pooled_objects_are_collected() -> None:
    _adopted()
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


def test_a_python_subclass_keeps_cpython_s_allocation_and_frees_its_own_slots() -> None:
    _adopted()

    class Annotated(MetadataRequest):
        __slots__ = ("note",)

    class WithDict(MetadataRequest):
        pass

    assert fast.pooled(MetadataRequest)
    for cls in (Annotated, WithDict):
        assert not fast.pooled(cls)
    plain = kcodec.encode(MetadataRequest(topics=[MetadataRequest.Topic(name="x")]), 12)

    def both() -> None:
        a = Annotated(topics=[MetadataRequest.Topic(name="x")])
        a.note = ["a list", "freed with it"]
        w = WithDict(topics=[MetadataRequest.Topic(name="x")])
        w.extra = {"key": [1, 2]}
        assert kcodec.encode(a, 12) == kcodec.encode(w, 12) == plain

    both()
    before = fast.free_object_bytes()
    for _ in range(1000):
        both()
    assert fast.free_object_bytes() == before  # the topics come and go through the lists; the subclasses' not
    with pytest.raises(TypeError):  # the classes' deallocators differ now: CPython refuses the swap
        MetadataRequest().__class__ = Annotated


def test_a_deep_chain_of_nested_objects_frees_without_exhausting_the_stack() -> None:
    _adopted()
    head = MetadataResponse.Topic(name="0")
    for i in range(200_000):  # no Kafka message nests so, but Python lets a user build it
        head = MetadataResponse.Topic(name=str(i), partitions=head)  # type: ignore[arg-type]
    del head  # the trashcan bounds the recursion, as for CPython's own containers


def test_a_request_s_topics_are_pooled_and_decode_as_before() -> None:
    _adopted()
    req = MetadataRequest(topics=[MetadataRequest.Topic(name=f"topic-{i}") for i in range(1000)])
    data = kcodec.encode(req, 12)
    for _ in range(3):
        got = kcodec.decode(MetadataRequest, data, 12)
        assert got == req and fast.pooled(MetadataRequest.Topic)
        del got
