# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference store_kv_cache and apply_token_bitmask against plain Python loops."""

from __future__ import annotations

import pytest
import torch

from deepinfer_kernels import ops


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("tokens, blocks, block_size", [(0, 2, 4), (5, 3, 4), (40, 8, 16)])
def test_store_kv_cache_matches_loop(tokens, blocks, block_size, dtype):
    torch.manual_seed(tokens)
    heads, head = 2, 24
    k = torch.randn(tokens, heads, head).to(dtype)
    v = torch.randn(tokens, heads, head).to(dtype)
    k_cache = torch.randn(blocks, block_size, heads, head).to(dtype)
    v_cache = torch.randn(blocks, block_size, heads, head).to(dtype)
    slots = torch.randperm(blocks * block_size)[:tokens]
    slots[::3] = -1                                              # padding tokens are skipped
    want_k, want_v = k_cache.clone(), v_cache.clone()
    for t, slot in enumerate(slots.tolist()):
        if slot >= 0:
            want_k[slot // block_size, slot % block_size] = k[t]
            want_v[slot // block_size, slot % block_size] = v[t]
    assert ops.store_kv_cache(k, v, k_cache, v_cache, slots) is None
    assert torch.equal(k_cache, want_k) and torch.equal(v_cache, want_v)


def _loop_mask(logits, bitmask, rows):
    out = logits.clone()
    for r in rows:
        for t in range(logits.shape[1]):
            word = int(bitmask[r, t // 32]) & 0xFFFFFFFF
            if not (word >> (t % 32)) & 1:
                out[r, t] = float("-inf")
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("batch, vocab, extra, rows", [(0, 32, 0, None), (3, 40, 0, None),
                                                       (4, 33, 1, [2, 0]), (5, 100, 2, [4])])
def test_apply_token_bitmask_matches_loop(batch, vocab, extra, rows, dtype):
    torch.manual_seed(vocab)
    logits = torch.randn(batch, vocab).to(dtype)
    bitmask = torch.randint(-2**31, 2**31, (batch, -(-vocab // 32) + extra), dtype=torch.int64)
    bitmask = bitmask.to(torch.int32)
    indices = None if rows is None else torch.tensor(rows)
    expected = _loop_mask(logits, bitmask, range(batch) if rows is None else rows)
    assert ops.apply_token_bitmask(logits, bitmask, indices) is None
    assert torch.equal(logits, expected)


def test_bitmask_all_bits_allow_everything_and_sign_bit_is_token_31():
    logits = torch.randn(2, 64)
    bitmask = torch.tensor([[-1, -1], [-2**31, 0]], dtype=torch.int32)
    before = logits.clone()
    ops.apply_token_bitmask(logits, bitmask)
    assert torch.equal(logits[0], before[0])
    allowed = torch.isfinite(logits[1]).nonzero().flatten().tolist()
    assert allowed == [31]
