# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference paged attention (see `deepinfer_kernels.ops.paged_attention_prefill/decode`).

One request at a time: gather its keys/values from the block table into dense tensors,
apply the causal (and sliding-window) mask, softmax in float32. The decode reference is
the same computation with one query per request; `split_size` only changes the summation
order of kernels, not the mathematical result, so the reference ignores it.

With `batch_invariant=True` the prefill reference attends one query at a time: the query at
position p runs exactly the computation of a one-token call with seq_len p + 1 (the keys
[0, p] as a dense prefix, a fresh copy of the query row), so its bits depend on p and the
cache contents only, never on the other queries, the chunking or the other requests.
"""

from __future__ import annotations

import torch


def paged_attention_prefill(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                            block_tables: torch.Tensor, cu_seqlens_q: torch.Tensor,
                            seq_lens: torch.Tensor, scale: float, sliding_window: int | None,
                            sinks: torch.Tensor | None, batch_invariant: bool = False
                            ) -> torch.Tensor:
    out = torch.zeros_like(q)
    starts = cu_seqlens_q.tolist()
    lens = seq_lens.tolist()
    for b, seq_len in enumerate(lens):
        start, end = starts[b], starts[b + 1]
        if end <= start:
            continue
        if not batch_invariant:
            out[start:end] = attend_one(q[start:end], k_cache, v_cache, block_tables[b],
                                        seq_len, scale, sliding_window, sinks)
            continue
        if seq_len < end - start:
            raise ValueError(f"seq_lens: {seq_len} is shorter than the request's "
                             f"{end - start} queries")
        for i in range(start, end):
            pos = seq_len - (end - i)
            out[i:i + 1] = attend_one(q[i:i + 1].clone(), k_cache, v_cache, block_tables[b],
                                      pos + 1, scale, sliding_window, sinks)
    return out


def paged_attention_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float,
                           sliding_window: int | None, sinks: torch.Tensor | None,
                           split_size: int) -> torch.Tensor:
    out = torch.zeros_like(q)
    for b, seq_len in enumerate(seq_lens.tolist()):
        if seq_len > 0:
            out[b:b + 1] = attend_one(q[b:b + 1], k_cache, v_cache, block_tables[b], seq_len,
                                      scale, sliding_window, sinks)
    return out


def gather_kv(cache: torch.Tensor, block_table: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Dense [seq_len, Hk, D] view of one request's keys or values."""
    block_size = cache.shape[1]
    num_blocks = -(-seq_len // block_size)
    blocks = block_table[:num_blocks].long()
    return cache[blocks].flatten(0, 1)[:seq_len]


def attend_one(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
               block_table: torch.Tensor, seq_len: int, scale: float,
               sliding_window: int | None, sinks: torch.Tensor | None) -> torch.Tensor:
    """Attention of one request's [q_len, Hq, D] queries (the last q_len positions)."""
    q_len, num_heads, _ = q.shape
    if seq_len < q_len:
        raise ValueError(f"seq_lens: {seq_len} is shorter than the request's {q_len} queries")
    group = num_heads // k_cache.shape[2]
    k = gather_kv(k_cache, block_table, seq_len).float().repeat_interleave(group, dim=1)
    v = gather_kv(v_cache, block_table, seq_len).float().repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q.float(), k) * scale        # [Hq, q_len, L]
    q_pos = torch.arange(seq_len - q_len, seq_len, device=q.device).unsqueeze(1)
    k_pos = torch.arange(seq_len, device=q.device).unsqueeze(0)
    visible = k_pos <= q_pos
    if sliding_window is not None:
        visible &= q_pos - k_pos < sliding_window
    scores = scores.masked_fill(~visible, float("-inf"))
    if sinks is not None:
        sink = sinks.float().view(num_heads, 1, 1).expand(num_heads, q_len, 1)
        probs = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :seq_len]
    else:
        probs = torch.softmax(scores, dim=-1)
    return torch.einsum("hqk,khd->qhd", probs, v).to(q.dtype)
