# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""PendingContext merges buffered observations into one contiguous run per request."""

from __future__ import annotations

import pytest
import torch

from deepinfer_dspark.pending_context import PendingContext


def rows(positions, width=3):
    """Features whose values encode their position (so a misplaced row is visible)."""
    return torch.tensor([[float(p)] * width for p in positions])


def test_merges_steps_drops_held_and_repeated_positions_and_stops_at_a_gap():
    pending = PendingContext()
    pending.add([("a", [0, 1, 2], rows([0, 1, 2])), ("b", [5], rows([5]))])
    pending.add([("a", [3], rows([3])), ("b", [6], rows([6]))])
    pending.add([("a", [2, 3, 4], rows([2, 3, 4]) + 100.0)])  # a recompute: first copies win
    pending.add([("b", [8], rows([8]))])                       # a gap after 6
    assert len(pending) == 10
    held = {"a": 1, "b": 5}
    out = {rid: (pos, feats) for rid, pos, feats in pending.take(lambda rid: held[rid])}
    assert out["a"][0] == [1, 2, 3, 4]
    assert out["a"][1][:, 0].tolist() == [1.0, 2.0, 3.0, 104.0]
    assert out["b"][0] == [5, 6] and out["b"][1][:, 0].tolist() == [5.0, 6.0]
    assert len(pending) == 0 and pending.take(lambda rid: 0) == []


def test_drop_and_full():
    pending = PendingContext(max_rows=4)
    pending.add([("a", [0, 1], rows([0, 1])), ("b", [0], rows([0]))])
    assert not pending.full
    pending.drop("a")
    assert len(pending) == 1
    pending.add([("b", [1, 2, 3], rows([1, 2, 3]))])
    assert pending.full
    assert [rid for rid, _, _ in pending.take(lambda rid: 0)] == ["b"]
    assert not pending.full and len(pending) == 0


def test_full_by_bytes():
    """The memory bound: features held, dropped requests' rows included, until `take` or until
    every request with buffered rows is dropped."""
    feats = torch.zeros(3, 8, dtype=torch.bfloat16)                 # 48 bytes a step
    pending = PendingContext(max_rows=100, max_bytes=96)
    pending.add_step(["a", "b", "c"], [0, 0, 0], [1, 1, 1], [0, 1, 2], feats)
    pending.drop("a")
    assert not pending.full
    pending.add_step(["b", "c"], [1, 1], [1, 1], [1, 2], feats)
    assert pending.full and len(pending) == 5
    pending.take(lambda rid: 0)
    assert not pending.full and not pending.holds
    pending.add_step(["d", "e"], [0, 0], [1, 1], [0, 1], feats[:2])
    pending.drop("d")
    assert pending.holds and len(pending) == 2                      # e's step holds d's row too
    pending.drop("x")                                               # never buffered: changes nothing
    assert pending.holds and len(pending) == 2
    pending.drop("e")
    assert not pending.holds and len(pending) == 0 and pending.pairs == 0   # nothing live: emptied
    assert pending.take(lambda rid: 0) == []
    pending.add_step(["d"], [0], [1], [0], feats[:1])               # an id may come back
    assert [(r, p) for r, p, _ in pending.take(lambda rid: 0)] == [("d", [0])]
    for bad in (0, -1, None, True):
        with pytest.raises(ValueError, match="max_bytes: must be an int >= 1"):
            PendingContext(max_bytes=bad)
    with pytest.raises(ValueError, match="max_rows"):
        PendingContext(max_rows=0)


def test_whole_steps_split_like_per_request_items():
    """`add_step` (one append per step, rows addressed by offsets into the step's tensor) gives
    exactly what `add` with the sliced items gives, drops included."""
    torch.manual_seed(0)
    steps = []
    for s in range(6):                                   # requests a, b, c with uneven rows per step
        ids = ["a", "b", "c"] if s != 3 else ["b", "c"]
        counts = [2 if (s, rid) == (0, "a") else 1 for rid in ids]
        firsts = [{"a": 0, "b": 10, "c": 20}[rid] + s + (1 if rid == "a" and s else 0) for rid in ids]
        starts = [sum(counts[:i]) for i in range(len(ids))]
        steps.append((ids, firsts, counts, starts, torch.randn(sum(counts), 4)))
    by_items, by_steps = PendingContext(), PendingContext()
    for number, (ids, firsts, counts, starts, feats) in enumerate(steps):
        by_items.add([(rid, list(range(f, f + n)), feats[r:r + n]) for rid, f, n, r in zip(ids, firsts, counts, starts)])
        by_steps.add_step(ids, firsts, counts, starts, feats)
        if number == 4:
            by_items.drop("c")
            by_steps.drop("c")
    assert len(by_steps) >= len(by_items)                # dropped rows count until split
    held = {"a": 0, "b": 10, "c": 20}
    want = {rid: (pos, feats) for rid, pos, feats in by_items.take(held.__getitem__)}
    got = {rid: (pos, feats) for rid, pos, feats in by_steps.take(held.__getitem__)}
    assert sorted(got) == sorted(want) == ["a", "b"]
    for rid in want:
        assert got[rid][0] == want[rid][0] and torch.equal(got[rid][1], want[rid][1])
    assert len(by_steps) == 0


def test_a_request_id_reused_after_drop_keeps_its_new_rows():
    """An id dropped while its rows sat in buffered steps, then reused by a new request before
    the split: only the old request's rows are dropped (found by an adversarial review: every
    row of the new request was skipped)."""
    pending = PendingContext()
    pending.add_step(["x", "y"], [0, 0], [2, 1], [0, 2], rows([0, 1, 0]))
    pending.drop("x")
    pending.add_step(["x", "y"], [0, 1], [1, 1], [0, 1], rows([0, 1]) + 50.0)   # a new "x"
    out = {rid: (pos, feats[:, 0].tolist()) for rid, pos, feats in pending.take(lambda rid: 0)}
    assert out == {"x": ([0], [50.0]), "y": ([0, 1], [0.0, 51.0])}


def test_random_steps_match_a_position_by_position_merge():
    """Steps with restarts (recomputes), repeats, gaps and drops: each request gets, from
    `held`, the first buffered copy of every position up to the first missing one."""
    gen = torch.Generator().manual_seed(1)
    for trial in range(40):
        pending, log = PendingContext(), []
        nxt = {rid: 0 for rid in "abcd"}
        dropped_at = {}
        for step in range(int(torch.randint(1, 8, (1,), generator=gen))):
            ids, firsts, counts, starts, row = [], [], [], [], 0
            for rid in "abcd":
                if torch.rand(1, generator=gen) < 0.3:
                    continue
                roll = float(torch.rand(1, generator=gen))
                first = 0 if roll < 0.1 else nxt[rid] + (2 if roll > 0.9 else 0)   # restart, gap
                n = int(torch.randint(0, 4, (1,), generator=gen))
                ids.append(rid), firsts.append(first), counts.append(n), starts.append(row)
                row += n
                nxt[rid] = max(nxt[rid], first + n)
            feats = torch.randn(row, 2, generator=gen)
            pending.add_step(ids, firsts, counts, starts, feats)
            log.append((ids, firsts, counts, starts, feats))
            if torch.rand(1, generator=gen) < 0.15:
                victim = "abcd"[int(torch.randint(0, 4, (1,), generator=gen))]
                pending.drop(victim)
                dropped_at[victim] = len(log)
        held = {rid: int(torch.randint(0, 3, (1,), generator=gen)) for rid in "abcd"}
        want = {}
        for rid in "abcd":
            copies = {}
            for number, (ids, firsts, counts, starts, feats) in enumerate(log):
                if number < dropped_at.get(rid, 0):
                    continue
                for r, f, n, s in zip(ids, firsts, counts, starts):
                    for i in range(n if r == rid else 0):
                        copies.setdefault(f + i, feats[s + i])
            p = held[rid]
            while p in copies:
                p += 1
            if p > held[rid]:
                want[rid] = (list(range(held[rid], p)), torch.stack([copies[q] for q in range(held[rid], p)]))
        got = {rid: (pos, f) for rid, pos, f in pending.take(held.__getitem__)}
        assert sorted(got) == sorted(want), trial
        for rid in want:
            assert got[rid][0] == want[rid][0] and torch.equal(got[rid][1], want[rid][1]), (trial, rid)


def test_features_need_one_row_per_position():
    pending = PendingContext()
    try:
        pending.add([("a", [0, 1], rows([0, 1, 2])), ("b", [5], rows([5]))])
    except ValueError as exc:
        assert "features" in str(exc) and "'a'" in str(exc)
    else:
        raise AssertionError("three rows for two positions were accepted")
    assert len(pending) == 0


def test_vectorized_split_equals_the_pair_by_pair_split():
    """Clean arrivals (a prefill chunk, then one row a step, some requests finishing and coming
    back, `held` anywhere in the first rows) take the tensor path, with the slow path's result;
    a repeat or a gap makes it step aside."""
    from deepinfer_dspark.pending_context import _take_runs, _take_runs_slow

    gen, fast = torch.Generator().manual_seed(7), 0
    for trial in range(60):
        pending, nxt = PendingContext(), {}
        for step in range(int(torch.randint(1, 12, (1,), generator=gen))):
            ids, firsts, counts, starts, row = [], [], [], [], 0
            for rid in "abcdef":
                if torch.rand(1, generator=gen) < 0.2:
                    continue
                n = int(torch.randint(1, 9, (1,), generator=gen)) if rid not in nxt else 1
                ids.append(rid), firsts.append(nxt.get(rid, 0)), counts.append(n), starts.append(row)
                nxt[rid] = nxt.get(rid, 0) + n
                row += n
            pending.add_step(ids, firsts, counts, starts, torch.randn(row, 3, generator=gen))
            if torch.rand(1, generator=gen) < 0.1 and nxt:
                victim = sorted(nxt)[int(torch.randint(0, len(nxt), (1,), generator=gen))]
                pending.drop(victim)
                del nxt[victim]                                  # it may come back from position 0
        held = {rid: int(torch.randint(0, 4, (1,), generator=gen)) for rid in "abcdef"}
        steps, dropped = list(pending._steps), dict(pending._dropped)
        runs, index, gapped = _take_runs(steps, dropped, held.__getitem__)
        slow_runs, slow_index, slow_gapped = _take_runs_slow(steps, dropped, held.__getitem__)
        if runs is None:                       # a repeat or a gap after a request's first kept row
            continue
        fast += 1
        assert runs == slow_runs and index.tolist() == slow_index.tolist(), trial   # order included
        assert sorted(gapped) == sorted(slow_gapped), trial
    assert fast >= 20
    repeat = [(["a"], [0], [2], [0], torch.zeros(2, 1)), (["a"], [1], [1], [0], torch.zeros(1, 1))]
    gap = [(["a"], [0], [2], [0], torch.zeros(2, 1)), (["a"], [3], [1], [0], torch.zeros(1, 1))]
    for steps in (repeat, gap):
        assert _take_runs(steps, {}, lambda rid: 0) == (None, None, [])
    # Items come in the order of each request's first buffered rows, held or not.
    zero_count = [(["a", "b"], [0, 0], [0, 1], [0, 0], torch.zeros(1, 1)), (["a"], [0], [1], [0], torch.zeros(1, 1))]
    held_first = [(["a", "b"], [0, 0], [2, 1], [0, 2], torch.zeros(3, 1)), (["a"], [2], [1], [0], torch.zeros(1, 1))]
    for steps, held in ((zero_count, {"a": 0, "b": 0}), (held_first, {"a": 2, "b": 0})):
        fast_runs, _, _ = _take_runs(steps, {}, held.__getitem__)
        assert fast_runs == _take_runs_slow(steps, {}, held.__getitem__)[0]


def test_pending_counts_pairs() -> None:
    """`pairs`: the (request, step) pairs a `take` walks, finished requests' included."""
    pending = PendingContext()
    pending.add_step(["a", "b"], [0, 0], [2, 1], [0, 2], torch.zeros(3, 1))
    pending.add([("a", [2], torch.zeros(1, 1))])
    assert pending.pairs == 3
    pending.drop("b")
    assert pending.pairs == 3
    pending.take(lambda request_id: 0)
    assert pending.pairs == 0


def test_a_rejected_add_changes_nothing() -> None:
    pending = PendingContext()
    pending.add_step(["b"], [0], [1], [0], torch.zeros(1, 4))
    with pytest.raises(ValueError, match="features"):   # the second item has too few rows
        pending.add([("a", [5, 6, 7], torch.zeros(3, 4)), ("c", [1, 2], torch.zeros(1, 4))])
    assert len(pending) == 1 and pending.pairs == 1
    pending.drop("a")
    assert len(pending) == 1 and pending.holds
    assert [(r, p) for r, p, _ in pending.take(lambda rid: 0)] == [("b", [0])]


def test_requests_with_a_gap_are_listed_and_skipped_on_both_paths():
    """Rows that start past `held` (steps whose features were declined in between): the tensor
    path drops the request and lists it, as the pair-by-pair path does; a gap after some rows
    projects those rows and lists the request; the clean requests' items are unchanged."""
    from deepinfer_dspark.pending_context import FEW_PAIRS, _take_runs, _take_runs_slow

    gen = torch.Generator().manual_seed(3)
    held = {"clean": 4, "late": 3, "later": 0, "gone": 9}
    steps_total = FEW_PAIRS // 3 + 1
    pending = PendingContext()
    for step in range(steps_total):   # one row a step each; "late" resumes at 7, "later" at 5
        ids, firsts = ["clean", "late", "later"], [4 + step, 7 + step, 5 + step]
        pending.add_step(ids, firsts, [1, 1, 1], [0, 1, 2], torch.randn(3, 2, generator=gen))
    steps = list(pending._steps)
    fast = _take_runs(steps, {}, held.__getitem__)
    slow = _take_runs_slow(steps, {}, held.__getitem__)
    assert fast[0] is not None and pending.pairs >= FEW_PAIRS          # the tensor path handled it
    assert fast[0] == slow[0] == [("clean", 4, steps_total)] and fast[1].tolist() == slow[1].tolist()
    assert sorted(fast[2]) == sorted(slow[2]) == ["late", "later"]
    items = pending.take(held.__getitem__)
    assert [(r, p[0], len(p)) for r, p, _ in items] == [("clean", 4, steps_total)]
    assert sorted(pending.gapped) == ["late", "later"]
    torch.testing.assert_close(items[0][2], torch.stack([s[4][0] for s in steps]))
    # A gap after some rows: those rows are projected, the request is listed (slow path).
    mid = PendingContext()
    mid.add_step(["a"], [0], [2], [0], rows([0, 1]))
    mid.add_step(["a"], [3], [1], [0], rows([3]))
    items = mid.take(lambda rid: 0)
    assert [(r, p) for r, p, _ in items] == [("a", [0, 1])] and mid.gapped == ["a"]
    whole = PendingContext()
    whole.add_step(["a"], [0], [2], [0], rows([0, 1]))
    assert whole.take(lambda rid: 1)[0][1] == [1] and whole.gapped == []


def test_a_recompute_after_a_gap_fills_it_on_both_paths():
    """Rows past a gap, then a recompute from 0 (a preempted request) buffered before the flush:
    the recompute fills the gap, so the request is projected through its last row and not listed
    as gapped, whichever path splits the steps."""
    from deepinfer_dspark.pending_context import _take_runs, _take_runs_slow

    steps = [(["a", "b"], [12 + i, i], [1, 1], [0, 1], torch.zeros(2, 1)) for i in range(9)]
    steps.append((["a"], [0], [22], [0], torch.zeros(22, 1)))
    held = {"a": 10, "b": 0}.__getitem__
    fast, slow = _take_runs(steps, {}, held), _take_runs_slow(steps, {}, held)
    assert slow[0] == [("a", 10, 12), ("b", 0, 9)] and slow[2] == []
    assert fast == (None, None, []) or (fast[0] == slow[0] and fast[1].tolist() == slow[1].tolist() and not fast[2])
