# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference paged attention against torch SDPA on densely gathered K/V."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from deepinfer_kernels import ops


def _paged_setup(seq_lens, block_size, kv_heads, head, seed):
    """Random dense K/V per request scattered into a shuffled paged cache."""
    gen = torch.Generator().manual_seed(seed)
    blocks_per = [-(-s // block_size) for s in seq_lens]
    num_blocks = sum(blocks_per) + 1
    order = torch.randperm(num_blocks, generator=gen)
    width = max(blocks_per, default=0) + 1
    table = torch.full((len(seq_lens), width), num_blocks - 1, dtype=torch.int32)
    k_cache = torch.full((num_blocks, block_size, kv_heads, head), float("nan"))
    v_cache = torch.full_like(k_cache, float("nan"))
    dense = []
    used = 0
    for b, seq in enumerate(seq_lens):
        ids = order[used:used + blocks_per[b]]
        used += blocks_per[b]
        table[b, :len(ids)] = ids.to(torch.int32)
        k = torch.randn(seq, kv_heads, head, generator=gen)
        v = torch.randn(seq, kv_heads, head, generator=gen)
        slots = ids.repeat_interleave(block_size)[:seq] * block_size + torch.arange(seq) % block_size
        k_cache.view(-1, kv_heads, head)[slots] = k
        v_cache.view(-1, kv_heads, head)[slots] = v
        dense.append((k, v))
    return k_cache, v_cache, table, dense


def _sdpa(q, k, v, seq_len, scale, window, sinks):
    """q [q_len, Hq, D], k/v [L, Hk, D] dense; the last q_len positions attend causally."""
    q_len, q_heads, _ = q.shape
    group = q_heads // k.shape[1]
    k = k.repeat_interleave(group, dim=1).transpose(0, 1).double()
    v = v.repeat_interleave(group, dim=1).transpose(0, 1).double()
    qh = q.transpose(0, 1).double()
    q_pos = torch.arange(seq_len - q_len, seq_len)[:, None]
    k_pos = torch.arange(seq_len)[None]
    mask = k_pos <= q_pos
    if window is not None:
        mask &= q_pos - k_pos < window
    out = F.scaled_dot_product_attention(qh, k, v, attn_mask=mask, scale=scale)
    if sinks is not None:
        # A sink only enlarges the softmax denominator: out * Z / (Z + e^sink).
        scores = (qh @ k.transpose(1, 2) * scale).masked_fill(~mask, float("-inf"))
        lse = torch.logsumexp(scores, dim=-1, keepdim=True)
        out = out * torch.sigmoid(lse - sinks.double()[:, None, None])
    return out.transpose(0, 1)


CASES = [
    # requests as (q_len, seq_len), q_heads, kv_heads, head, block_size, window, sinks
    (((5, 5),), 2, 1, 16, 4, None, False),
    (((3, 7), (1, 9), (0, 4), (4, 4)), 4, 2, 32, 4, None, False),
    (((17, 40), (1, 33), (32, 32), (9, 100)), 8, 2, 64, 16, None, False),
    (((17, 40), (1, 33), (9, 100)), 8, 2, 64, 16, 8, False),
    (((17, 40), (1, 33), (9, 100)), 4, 4, 64, 16, None, True),
    (((13, 29), (7, 7)), 6, 2, 80, 8, 11, True),
]


@pytest.mark.parametrize("requests, hq, hk, head, block, window, sinks", CASES)
def test_prefill_matches_sdpa(requests, hq, hk, head, block, window, sinks):
    seq_lens = [s for _, s in requests]
    k_cache, v_cache, table, dense = _paged_setup(seq_lens, block, hk, head, seed=len(requests))
    q_lens = [q for q, _ in requests]
    q = torch.randn(sum(q_lens), hq, head)
    cu = torch.tensor([0] + q_lens).cumsum(0).to(torch.int32)
    sink_t = torch.randn(hq) if sinks else None
    scale = head ** -0.5
    out = ops.paged_attention_prefill(q, k_cache, v_cache, table, cu,
                                      torch.tensor(seq_lens, dtype=torch.int32), scale,
                                      window, sink_t)
    for b, (q_len, seq) in enumerate(requests):
        if q_len == 0:
            continue
        rows = slice(int(cu[b]), int(cu[b + 1]))
        expected = _sdpa(q[rows], *dense[b], seq, scale, window, sink_t)
        torch.testing.assert_close(out[rows].double(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("requests, hq, hk, head, block, window, sinks", CASES)
def test_decode_matches_prefill_of_last_token_and_sdpa(requests, hq, hk, head, block, window,
                                                       sinks):
    seq_lens = [s for _, s in requests]
    k_cache, v_cache, table, dense = _paged_setup(seq_lens, block, hk, head, seed=7)
    q = torch.randn(len(requests), hq, head)
    sink_t = torch.randn(hq) if sinks else None
    lens = torch.tensor(seq_lens, dtype=torch.int32)
    out = ops.paged_attention_decode(q, k_cache, v_cache, table, lens, head ** -0.5, window,
                                     sink_t, split_size=8)
    for b, seq in enumerate(seq_lens):
        expected = _sdpa(q[b:b + 1], *dense[b], seq, head ** -0.5, window, sink_t)
        torch.testing.assert_close(out[b:b + 1].double(), expected, rtol=1e-5, atol=1e-5)
    cu = torch.arange(len(requests) + 1, dtype=torch.int32)
    as_prefill = ops.paged_attention_prefill(q, k_cache, v_cache, table, cu, lens, head ** -0.5,
                                             window, sink_t)
    torch.testing.assert_close(out, as_prefill, rtol=1e-6, atol=1e-6)


def test_decode_row_is_batch_invariant_and_padding_rows_are_zero():
    k_cache, v_cache, table, _ = _paged_setup([30, 1, 77], 16, 2, 32, seed=3)
    q = torch.randn(3, 4, 32)
    lens = torch.tensor([30, 1, 77], dtype=torch.int32)
    full = ops.paged_attention_decode(q, k_cache, v_cache, table, lens, 0.2)
    alone = ops.paged_attention_decode(q[2:], k_cache, v_cache, table[2:], lens[2:], 0.2)
    assert torch.equal(full[2:], alone)
    padded = ops.paged_attention_decode(q, k_cache, v_cache, table,
                                        torch.tensor([30, 0, 77], dtype=torch.int32), 0.2)
    assert torch.count_nonzero(padded[1]) == 0
    assert torch.equal(padded[0], full[0])


def test_empty_batches():
    k_cache = torch.randn(2, 4, 1, 16)
    table = torch.zeros(0, 1, dtype=torch.int32)
    lens = torch.zeros(0, dtype=torch.int32)
    out = ops.paged_attention_prefill(torch.empty(0, 2, 16), k_cache, k_cache, table,
                                      torch.zeros(1, dtype=torch.int32), lens, 0.25)
    assert out.shape == (0, 2, 16)
    out = ops.paged_attention_decode(torch.empty(0, 2, 16), k_cache, k_cache, table, lens, 0.25)
    assert out.shape == (0, 2, 16)
