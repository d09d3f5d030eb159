# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton MoE routing and `align_by_expert` against the reference routing and a brute-force
layout (natively on CUDA, else under the Triton interpreter: small shapes)."""

from __future__ import annotations

import pytest
import torch

from deepinfer_kernels.backends.reference.moe import select_experts as reference_select
from deepinfer_kernels.backends.triton import available
from deepinfer_kernels.testing import default_device_type, poison_allocator

DEVICE = default_device_type()
pytestmark = pytest.mark.skipif(not available(DEVICE), reason="needs CUDA or TRITON_INTERPRET=1 "
                                "set before triton's first import")

# tokens, experts, top_k, scoring, bias, (n_group, topk_group), renormalize, scale
ROUTING = {
    "one_token": (1, 8, 2, "softmax", False, None, True, 1.0),
    "softmax_e64": (37, 64, 8, "softmax", False, None, True, 1.0),
    "softmax_odd_e_norenorm": (65, 6, 3, "softmax", False, None, False, 1.0),
    "sigmoid_bias_groups": (33, 16, 4, "sigmoid", True, (4, 2), True, 2.5),
    "sigmoid_groups_odd": (13, 24, 3, "sigmoid", True, (4, 2), False, 1.0),
    "softmax_groups": (10, 32, 5, "softmax", False, (8, 3), True, 1.5),
    "sigmoid_e128": (19, 128, 8, "sigmoid", True, (8, 4), True, 2.5),
    "softmax_e128": (9, 128, 6, "softmax", False, None, True, 1.0),
    "softmax_e1024": (3, 1024, 8, "softmax", False, None, True, 1.0),
    "sigmoid_e1024_groups": (5, 1024, 8, "sigmoid", True, (8, 4), True, 2.5),
    "softmax_e1000_one_token": (1, 1000, 7, "softmax", False, None, False, 1.0),
}


def _routing_inputs(spec, seed: int):
    tokens, experts, top_k, scoring, bias, groups, renorm, scale = spec
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(tokens, experts, generator=gen)
    b = torch.randn(experts, generator=gen) * 0.1 if bias else None
    n_group, topk_group = groups or (None, None)
    logits, b = logits.to(DEVICE), b.to(DEVICE) if b is not None else None
    return logits, (top_k, scoring, b, n_group, topk_group, renorm, scale)


@pytest.mark.parametrize("name", list(ROUTING))
def test_routing_matches_reference(name):
    from deepinfer_kernels.backends.triton.moe_routing import select_experts

    logits, routing = _routing_inputs(ROUTING[name], seed=len(name))
    want_weights, want_ids = reference_select(logits, *routing)
    poison_allocator(DEVICE)
    weights, ids = select_experts(logits, *routing)
    assert ids.dtype == torch.int32 and weights.dtype == torch.float32
    assert torch.equal(ids.long(), want_ids)             # same experts, same slot order
    torch.testing.assert_close(weights, want_weights, rtol=1e-6, atol=1e-7)


def test_routing_ties_go_to_the_lower_expert():
    from deepinfer_kernels.backends.triton.moe_routing import select_experts

    logits = torch.zeros(3, 70, device=DEVICE)
    logits[1, 5] = logits[1, 9] = 1.0
    _, ids = select_experts(logits, 3, "softmax", None, None, None, True, 1.0)
    assert ids.tolist() == [[0, 1, 2], [5, 9, 0], [0, 1, 2]]


@pytest.mark.parametrize("experts", [64, 1024])
def test_routing_is_batch_invariant(experts):
    from deepinfer_kernels.backends.triton.moe_routing import select_experts

    spec = (41 if experts == 64 else 5, experts, 8, "sigmoid", True, (8, 4), True, 2.5)
    logits, routing = _routing_inputs(spec, seed=experts)
    weights, ids = select_experts(logits, *routing)
    for rows in (slice(0, 1), slice(2, 5), slice(len(logits) - 1, None)):
        alone_weights, alone_ids = select_experts(logits[rows].clone(), *routing)
        assert torch.equal(alone_ids, ids[rows]) and torch.equal(alone_weights, weights[rows])


def _brute_force_layout(ids: torch.Tensor, experts: int, block_m: int, blocks: int):
    """(rows, tiles): the pairs stably sorted by expert, each expert's segment padded to
    block_m rows with the pair count; the expert of each tile, `experts` past the end."""
    flat = ids.flatten().tolist()
    pairs = len(flat)
    rows, tiles = [], []
    for e in range(experts):
        members = [p for p in range(pairs) if flat[p] == e]
        if members:
            padded = -(-len(members) // block_m) * block_m
            rows += members + [pairs] * (padded - len(members))
            tiles += [e] * (padded // block_m)
    return rows, tiles + [experts] * (blocks - len(tiles))


# tokens, top_k, experts, block_m, distribution
ALIGN = [
    (1, 1, 4, 16, "uniform"),
    (3, 2, 40, 16, "uniform"),          # fewer pairs than experts
    (50, 3, 5, 16, "uniform"),          # two chunks
    (100, 8, 64, 64, "uniform"),
    (37, 4, 7, 32, "every_third"),      # empty experts between used ones
    (300, 1, 3, 128, "one_expert"),     # one full expert, two empty
    (301, 2, 16, 16, "uniform"),
    (20, 2, 1024, 16, "uniform"),       # E = 1024: count in expert blocks
    (9, 3, 1000, 64, "every_third"),
]


def _ids(tokens, top_k, experts, distribution, seed):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, experts, (tokens, top_k), generator=gen, dtype=torch.int32)
    if distribution == "every_third":
        ids = ids // 3 * 3
    elif distribution == "one_expert":
        ids = torch.full_like(ids, experts // 2)
    return ids


@pytest.mark.parametrize("tokens, top_k, experts, block_m, distribution", ALIGN)
def test_align_by_expert_matches_brute_force(tokens, top_k, experts, block_m, distribution):
    from deepinfer_kernels.backends.triton.moe_routing import align_by_expert, max_blocks

    ids = _ids(tokens, top_k, experts, distribution, seed=tokens + experts)
    blocks = max_blocks(ids.numel(), experts, block_m)
    want_rows, want_tiles = _brute_force_layout(ids, experts, block_m, blocks)
    poison_allocator(DEVICE)
    sorted_pairs, tile_experts = align_by_expert(ids.to(DEVICE), experts, block_m)
    assert sorted_pairs.shape == (blocks * block_m,) and tile_experts.shape == (blocks,)
    assert tile_experts.tolist() == want_tiles
    assert sorted_pairs[:len(want_rows)].tolist() == want_rows   # later rows: never read


def test_align_by_expert_without_pairs():
    from deepinfer_kernels.backends.triton.moe_routing import align_by_expert

    sorted_pairs, tile_experts = align_by_expert(
        torch.empty((0, 2), dtype=torch.int32, device=DEVICE), 8, 16)
    assert sorted_pairs.numel() == 0 and tile_experts.numel() == 0
