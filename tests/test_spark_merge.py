"""Pass 2's merge of a partition's sorted spill files (kcodec/spark/segments.merge_runs): the stream of
``heapq.merge`` with the same key, ties in the files' order, whatever the runs' lengths; and the rows of
real spill files in the same order as that merge."""

from __future__ import annotations

import heapq
import operator
import random

import pyarrow as pa
import pytest

from kcodec.spark import segments, storage

KEY = operator.itemgetter(0, 1, 2)


def _files(rnd: random.Random, n_files: int, n_rows: int, keys: int) -> list[list[tuple[int, ...]]]:
    files = []
    for f in range(n_files):
        rows = [(rnd.randrange(keys), rnd.randrange(2), rnd.randrange(keys), f, i) for i in range(rnd.randrange(n_rows))]
        files.append(sorted(rows, key=KEY))
    return files


def _spill(tmp_path, files):
    paths = []
    for f, rows in enumerate(files):
        cols = list(zip(*rows)) if rows else [[]] * 5
        table = pa.table({n: pa.array(c, pa.int64()) for n, c in zip("abcde", cols)})
        path = str(tmp_path / f"r{f:03d}.arrow")
        storage.write_arrow(path, table)
        paths.append(path)
    return paths


@pytest.mark.parametrize("seed", range(40))
def test_the_stream_of_heapq_merge(seed):
    rnd = random.Random(seed)
    # few keys: long runs and ties across files (the fifth item says which file a row came from)
    files = _files(rnd, rnd.randrange(0, 7), 60, rnd.choice((2, 5, 1000)))
    want = list(heapq.merge(*files, key=KEY))
    got = list(segments.merge_runs([iter(f) for f in files], KEY))
    assert got == want


def test_rows_are_pulled_as_they_go():
    """A file is read only as far as the merge needs (one batch per file held, as before)."""
    pulled = []

    def rows(name, n):
        for i in range(n):
            pulled.append((name, i))
            yield (i, 0, 0, name)

    stream = segments.merge_runs([rows("a", 3), rows("b", 3)], KEY)
    assert next(stream) == (0, 0, 0, "a")
    assert pulled == [("a", 0), ("b", 0)]
    assert list(stream) == [(0, 0, 0, "b"), (1, 0, 0, "a"), (1, 0, 0, "b"), (2, 0, 0, "a"), (2, 0, 0, "b")]


def test_spill_files_merge_in_key_order(tmp_path):
    paths = _spill(tmp_path, _files(random.Random(7), 5, 300, 40))
    got = list(segments.merged_rows(paths))
    assert [r[:3] for r in got] == sorted(r[:3] for r in got)
    assert len(got) == sum(pa.ipc.open_file(p).read_all().num_rows for p in paths)


@pytest.mark.parametrize("group_bytes", [0, 1 << 30])  # groups merged row by row, or whole by Arrow's sort
@pytest.mark.parametrize("fan_in, seed", [(2, 0), (3, 1), (4, 2), (2, 3)])
def test_merged_through_files_of_merges_as_one_merge(tmp_path, monkeypatch, fan_in, seed, group_bytes):
    """Beyond ``FAN_IN`` files, groups are merged into files first (a task's memory then does not grow with
    the capture's ranges): the stream is still one merge's, ties in the files' order (the fourth item says
    which file a row came from), and the merge's own files are gone once it ends."""
    monkeypatch.setattr(segments, "FAN_IN", fan_in)
    monkeypatch.setattr(segments, "SLICE", 7)  # batches made tuples a slice at a time
    monkeypatch.setattr(segments, "GROUP_BYTES", group_bytes)
    rnd = random.Random(seed)
    files = _files(rnd, 11, 40, 6)
    paths = _spill(tmp_path, files)
    got = list(segments.merged_rows(paths))
    assert got == list(heapq.merge(*files, key=KEY))
    assert sorted(str(p) for p in tmp_path.iterdir()) == paths


def test_a_merge_left_early_removes_its_files(tmp_path, monkeypatch):
    monkeypatch.setattr(segments, "FAN_IN", 2)
    paths = _spill(tmp_path, _files(random.Random(5), 6, 40, 6))
    stream = segments.merged_rows(paths)
    next(stream)
    assert len(list(tmp_path.iterdir())) > len(paths)  # the groups' merges, read by the last one
    stream.close()
    assert sorted(str(p) for p in tmp_path.iterdir()) == paths
