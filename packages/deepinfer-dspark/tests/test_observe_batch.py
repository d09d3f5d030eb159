# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`DSparkDraftRunner.observe_batch` (one context projection per engine step) stores the same
context K/V as observing each request alone, and rejects a bad item before storing anything."""

from __future__ import annotations

import pytest
import torch

from deepinfer_dspark.checkpoint import load_state_dict
from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.draft_runner import DSparkDraftRunner
from deepinfer_dspark.drafter import DSparkDrafter


def runner(tiny) -> DSparkDraftRunner:
    tiny_config, _, random_state_dict = tiny
    config = tiny_config()
    drafter = DSparkDrafter(DSparkConfig.from_dict(config), torch.float32, "cpu")
    load_state_dict(drafter, random_state_dict(config, seed=7))
    return DSparkDraftRunner(drafter.eval())


def test_batched_observation_equals_one_by_one(tiny) -> None:
    one, many = runner(tiny), runner(tiny)
    width = one.drafter.config.feature_size
    g = torch.Generator().manual_seed(0)
    steps = [[("a", 5), ("b", 1), ("c", 0)], [("a", 1), ("b", 7), ("c", 3)], [("b", 1), ("c", 1)]]
    for step in steps:
        items = []
        for rid, n in step:
            start = one.num_positions(rid)
            items.append((rid, list(range(start, start + n)), torch.randn(n, width, generator=g)))
        for item in items:
            one.observe(*item)
        many.observe_batch(items)
    for rid in ("a", "b", "c"):
        (ka, va), (kb, vb) = one.context_of(rid), many.context_of(rid)
        assert one.num_positions(rid) == many.num_positions(rid) == ka.shape[1] == kb.shape[1] > 0
        torch.testing.assert_close(ka, kb, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(va, vb, rtol=1e-5, atol=1e-5)


def test_a_bad_item_stores_nothing(tiny) -> None:
    r = runner(tiny)
    width = r.drafter.config.feature_size
    good = ("a", [0, 1], torch.randn(2, width))
    bad = ("b", [3], torch.randn(1, width))  # positions must start at 0 for a new request
    with pytest.raises(ValueError, match="positions"):
        r.observe_batch([good, bad])
    assert r.num_positions("a") == 0 and r.num_positions("b") == 0
