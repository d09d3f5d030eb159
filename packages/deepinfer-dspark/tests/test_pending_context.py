# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""PendingContext merges buffered observations into one contiguous run per request."""

from __future__ import annotations

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
