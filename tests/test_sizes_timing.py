"""The order of interleaved rounds (kcodec.sizes.timing): every codec runs right after every other
equally often, so none carries one neighbour's leftovers more than the others do."""

from __future__ import annotations

from collections import Counter

import pytest

from kcodec.sizes.timing import interleaved, interleaved_round, round_order


@pytest.mark.parametrize("n", range(1, 9))
def test_each_predecessor_equally_often(n):
    rows = n if n % 2 == 0 else 2 * n
    orders = [round_order(n, turn) for turn in range(rows)]
    assert all(sorted(order) == list(range(n)) for order in orders)
    pairs = Counter((a, b) for order in orders for a, b in zip(order, order[1:]))
    if n > 1:
        assert set(pairs) == {(a, b) for a in range(n) for b in range(n) if a != b}
        assert set(pairs.values()) == {rows * (n - 1) // (n * (n - 1))}
    assert [round_order(n, turn + rows) for turn in range(rows)] == orders  # the design repeats


def test_each_first_equally_often():
    for n in (2, 3, 4, 5):
        rows = n if n % 2 == 0 else 2 * n
        assert set(Counter(round_order(n, turn)[0] for turn in range(rows)).values()) == {rows // n}


def test_rounds_call_in_that_order():
    calls: list[str] = []
    fns = {name: (lambda name=name: calls.append(name)) for name in "abcd"}
    samples: dict = {}
    for turn in range(4):
        interleaved_round(fns, samples, turn)
    assert calls == ["abcd"[i] for turn in range(4) for i in round_order(4, turn)]
    assert {name: len(got) for name, got in samples.items()} == dict.fromkeys("abcd", 4)
    assert set(interleaved({"x": lambda: None}, rounds=3)) == {"x"}
