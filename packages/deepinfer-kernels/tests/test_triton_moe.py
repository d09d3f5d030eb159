# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton fused_moe against `reference` (itself checked against HF in test_ref_moe.py).

Runs natively on CUDA, else under the Triton interpreter (tiny shapes; bfloat16 only on CUDA:
the interpreter rounds float32 -> bfloat16 casts toward zero).
"""

from __future__ import annotations

import pytest
import torch

from deepinfer_kernels import ops
from deepinfer_kernels.backends.reference.moe import select_experts as reference_select
from deepinfer_kernels.backends.triton import available
from deepinfer_kernels.testing import default_device_type, poison_allocator, tolerance

DEVICE = default_device_type()
pytestmark = pytest.mark.skipif(not available(DEVICE), reason="needs CUDA or TRITON_INTERPRET=1 "
                                "set before triton's first import")
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else [])

# tokens, hidden, inter, experts, top_k, scoring, bias, groups, renormalize, scale
SPECS = {
    "empty": (0, 16, 8, 4, 2, "softmax", False, None, True, 1.0),
    "softmax_odd": (13, 40, 24, 6, 2, "softmax", False, None, True, 1.0),
    "softmax_norenorm": (9, 32, 20, 8, 3, "softmax", False, None, False, 1.0),
    "softmax_all_experts": (5, 16, 16, 4, 4, "softmax", False, None, True, 1.0),
    "sigmoid_bias_groups": (11, 24, 16, 16, 4, "sigmoid", True, (4, 2), True, 2.5),
    "sigmoid_bias_only": (7, 16, 40, 12, 3, "sigmoid", True, None, True, 1.0),
    "softmax_groups_no_bias": (6, 16, 8, 8, 3, "softmax", False, (2, 1), False, 1.5),
    "sigmoid_top1": (17, 48, 8, 6, 1, "sigmoid", False, None, False, 1.0),
    "many_experts_few_tokens": (3, 16, 8, 40, 5, "softmax", False, None, True, 1.0),
}


def _inputs(spec, dtype, seed):
    tokens, hidden, inter, experts, top_k, scoring, bias, groups, renorm, scale = spec
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, hidden, generator=gen).to(dtype)
    logits = torch.randn(tokens, experts, generator=gen)
    w13 = (torch.randn(experts, 2 * inter, hidden, generator=gen) * hidden ** -0.5).to(dtype)
    w2 = (torch.randn(experts, hidden, inter, generator=gen) * inter ** -0.5).to(dtype)
    b = torch.randn(experts, generator=gen) * 0.1 if bias else None
    n_group, topk_group = groups or (None, None)
    tensors = [t.to(DEVICE) if t is not None else None for t in (x, logits, w13, w2, b)]
    x, logits, w13, w2, b = tensors
    return (x, logits, w13, w2, top_k, scoring, b, n_group, topk_group, renorm, scale)


def _assert_close(got, want, dtype):
    rtol, atol = tolerance("fused_moe", dtype)
    assert not got.isnan().any()
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(SPECS))
def test_fused_moe_matches_reference(name, dtype):
    args = _inputs(SPECS[name], dtype, seed=len(name))
    want = ops.fused_moe(*args, backend="reference")
    poison_allocator(DEVICE)
    got = ops.fused_moe(*args, backend="triton")
    assert got.shape == want.shape and got.dtype == want.dtype
    _assert_close(got, want, dtype)


@pytest.mark.parametrize("name", [n for n in SPECS if n != "empty"])
def test_routing_matches_reference(name):
    from deepinfer_kernels.backends.triton.moe_routing import select_experts

    _, logits, _, _, *routing = _inputs(SPECS[name], torch.float32, seed=7)
    weights, ids = select_experts(logits, *routing)
    want_weights, want_ids = reference_select(logits, *routing)
    assert torch.equal(ids.long(), want_ids)             # same experts, same slot order
    torch.testing.assert_close(weights, want_weights, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("experts, block_m, tokens", [(5, 16, 11), (40, 16, 11), (3, 4, 11),
                                                      (300, 16, 60), (7, 32, 150),
                                                      (1000, 16, 60)])
def test_align_by_expert_matches_brute_force(experts, block_m, tokens):
    from deepinfer_kernels.backends.triton.moe_routing import align_by_expert, max_blocks

    gen = torch.Generator().manual_seed(experts)
    ids = torch.randint(0, experts, (tokens, 3), generator=gen, dtype=torch.int32)
    pairs = ids.numel()
    sorted_pairs, tile_experts = align_by_expert(ids.to(DEVICE), experts, block_m)
    want_rows, want_tiles = [], []
    for e in range(experts):
        members = [p for p in range(pairs) if ids.flatten()[p] == e]
        if members:
            padded = -(-len(members) // block_m) * block_m
            want_rows += members + [pairs] * (padded - len(members))
            want_tiles += [e] * (padded // block_m)
    blocks = max_blocks(pairs, experts, block_m)
    want_tiles += [experts] * (blocks - len(want_tiles))
    assert tile_experts.tolist() == want_tiles
    assert sorted_pairs[:len(want_rows)].tolist() == want_rows   # later rows: never read


def test_every_config_matches_reference():
    from deepinfer_kernels.backends.triton.moe import CONFIGS, FIXED_CONFIG, fused_moe

    args = _inputs(SPECS["sigmoid_bias_groups"], torch.float32, seed=3)
    want = ops.fused_moe(*args, backend="reference")
    for cfg in [c for _, c in CONFIGS] + [FIXED_CONFIG]:
        poison_allocator(DEVICE)
        _assert_close(fused_moe(*args, config=cfg), want, torch.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["softmax_odd", "sigmoid_bias_groups"])
def test_down_config_of_its_own_matches_reference(name, dtype):
    """The down GEMM launched with other block_n, block_k, num_warps and num_stages than
    gate/up (odd sizes: masked columns and reduction tails in both GEMMs)."""
    from deepinfer_kernels.backends.triton.moe import MoeConfig, fused_moe

    cfg = MoeConfig(16, 16, 16, 2, 1, 1, down=(32, 32, 2, 2))
    args = _inputs(SPECS[name], dtype, seed=5)
    want = ops.fused_moe(*args, backend="reference")
    poison_allocator(DEVICE)
    _assert_close(fused_moe(*args, config=cfg), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_split_tiles_match_reference_and_unsplit(dtype):
    """block_m 32: experts whose last tile holds <= 16 valid rows take the half-tile path, the
    others the full one (30 tokens x top-3 over 5 experts: 18 rows an expert on average, so both
    paths run); split and unsplit tiles agree with the reference."""
    from deepinfer_kernels.backends.triton.moe import MoeConfig, fused_moe

    spec = (30, 32, 24, 5, 3, "softmax", False, None, True, 1.0)
    args = _inputs(spec, dtype, seed=6)
    want = ops.fused_moe(*args, backend="reference")
    split = MoeConfig(32, 16, 16, 2, 1, 1, down=(32, 16, 1, 1))
    poison_allocator(DEVICE)
    got = fused_moe(*args, config=split)
    _assert_close(got, want, dtype)
    whole = fused_moe(*args, config=MoeConfig(32, 16, 16, 2, 1, 1, down=(32, 16, 1, 1), split_tiles=False))
    _assert_close(got, whole, dtype)
    ids = reference_select(*args[1:2], *args[4:])[1]
    rows = torch.bincount(ids.flatten().long(), minlength=5) % 32
    assert ((rows > 0) & (rows <= 16)).any() and (rows > 16).any()   # both paths were taken


@pytest.mark.parametrize("gather_x", [False, True], ids=["pointer_x", "gathered_x"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["softmax_odd", "sigmoid_bias_groups", "many_experts_few_tokens"])
def test_tma_loads_match_reference(name, dtype, gather_x):
    """Weight tiles and the down GEMM's activation tiles through TMA descriptors (emulated by the
    interpreter on the CPU), the input rows too when gathered first: odd I and H make tiles
    cross into the next weights' rows and past the last column; the poisoned, unwritten padding
    rows of the activations are loaded (whole and split tiles) but must never reach the output."""
    from deepinfer_kernels.backends.triton.moe import MoeConfig, fused_moe

    cfg = MoeConfig(32, 16, 16, 2, 1, 1, down=(32, 16, 1, 1), tma=True, gather_x=gather_x)
    spec = list(SPECS[name])
    spec[1], spec[2] = 40, 24      # H and I: rows 16-byte aligned (TMA), tiles not dividing them
    args = _inputs(tuple(spec), dtype, seed=7)
    want = ops.fused_moe(*args, backend="reference")
    poison_allocator(DEVICE)
    _assert_close(fused_moe(*args, config=cfg), want, dtype)


@pytest.mark.parametrize("kwargs, field", [
    (dict(down=(16, 16)), "down"), (dict(down=(48, 16, 4, 3)), "down block_n"), (dict(block_k=8), "block_k"),
    (dict(group_m=0), "group_m"), (dict(num_warps=3), "num_warps"), (dict(down=(32, 32, 4, 0)), "down num_stages"),
])
def test_bad_configs_name_the_field(kwargs, field):
    from deepinfer_kernels.backends.triton.moe import MoeConfig

    values = dict(block_m=32, block_n=32, block_k=32, group_m=4, num_warps=4, num_stages=2) | kwargs
    with pytest.raises(ValueError, match=field):
        MoeConfig(**values)


def test_config_for_dtype_and_down_gemm():
    from deepinfer_kernels.backends.triton.moe import MoeConfig, for_dtype

    cfg = MoeConfig(64, 128, 64, 8, 4, 4, down=(256, 128, 8, 5))
    assert cfg.down_gemm() == MoeConfig(64, 256, 128, 8, 8, 5)
    assert MoeConfig(64, 128, 64, 8, 4, 4).down_gemm() == MoeConfig(64, 128, 64, 8, 4, 4)
    assert for_dtype(cfg, torch.bfloat16) == cfg
    assert for_dtype(cfg, torch.float32) == MoeConfig(64, 128, 32, 8, 4, 3, down=(256, 64, 8, 3))
    small = MoeConfig(16, 16, 16, 2, 1, 1)
    assert for_dtype(small, torch.float32) == small


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fused_moe_is_batch_invariant(dtype):
    from deepinfer_kernels.backends.triton.moe import FIXED_CONFIG, INTERPRETER_CONFIG, fused_moe

    cfg = FIXED_CONFIG if DEVICE == "cuda" else INTERPRETER_CONFIG
    spec = (19, 32, 24, 8, 2, "softmax", False, None, True, 1.0)
    x, logits, *rest = _inputs(spec, dtype, seed=4)
    full = fused_moe(x, logits, *rest, config=cfg)
    for rows in (slice(0, 1), slice(5, 12), slice(18, 19)):
        alone = fused_moe(x[rows], logits[rows], *rest, config=cfg)
        assert torch.equal(full[rows], alone)
