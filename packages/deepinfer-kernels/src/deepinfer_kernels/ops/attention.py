# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Attention over the paged KV cache: prefill (variable-length queries) and decode."""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import dispatch
from deepinfer_kernels.ops._checks import (FLOAT_DTYPES, check_cu_seqlens, check_flag, check_paged_tables,
                                           check_positive, check_same_device, check_size, check_tensor)

DEFAULT_DECODE_SPLIT_SIZE = 256
"""KV tokens per split of decode attention. Fixed, so a row's result is batch invariant."""


def paged_attention_prefill(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                            block_tables: torch.Tensor, cu_seqlens_q: torch.Tensor,
                            seq_lens: torch.Tensor, scale: float,
                            sliding_window: int | None = None, sinks: torch.Tensor | None = None,
                            *, batch_invariant: bool = False, backend: str | None = None
                            ) -> torch.Tensor:
    """Causal attention of a variable-length batch of query chunks over the paged KV cache.

    The keys/values of the step's own tokens must be stored (`store_kv_cache`) BEFORE the
    call: a cached prefix and the fresh tokens are read the same way. Request b owns query
    rows `cu_seqlens_q[b]:cu_seqlens_q[b+1]` (q_len_b rows) and `seq_lens[b]` keys (cached
    prefix + its chunk); its query i sits at position `p = seq_lens[b] - q_len_b + i` and
    sees key positions j with `j <= p` and, with a sliding window W, `p - j < W`.
    Key j of request b lives in block `block_tables[b, j // S]`, row `j % S`.
    Grouped-query attention: query head h reads KV head `h // (Hq // Hk)`.
    Softmax in float32. With `sinks`, each head's sink logit joins the softmax denominator
    only (gpt-oss attention sinks): `p_j = exp(s_j) / (sum_i exp(s_i) + exp(sink_h))`.
    With `batch_invariant=True`, the output row of a query at position p is bitwise the same
    as that of the same query computed alone as a one-token call with seq_len p + 1: it
    depends neither on the other queries of the call, nor on how the request's tokens were
    split into chunks (q_len), nor on the other requests. Kernels keep one fixed key order
    per query (KV blocks from position 0 upward in fixed units, masking by position).

    Args:
        q: [T, Hq, D] float32/float16/bfloat16, T = cu_seqlens_q[-1].
        k_cache: [N, S, Hk, D], same dtype as `q`; Hq % Hk == 0.
        v_cache: [N, S, Hk, D], same shape and dtype as `k_cache`.
        block_tables: [B, M] int32 block ids in [0, N) (entries a request's keys use).
        cu_seqlens_q: [B+1] int32, starts at 0, non-decreasing, ends at T.
        seq_lens: [B] int32, q_len_b <= seq_lens[b] <= M * S. The value ranges are checked on
            CPU tensors and are preconditions on accelerators.
        scale: Logit scale, usually D ** -0.5 (> 0).
        sliding_window: None (full attention) or the window W > 0 in tokens.
        sinks: None or [Hq] float32/float16/bfloat16 logits.
        batch_invariant: Require per-query invariant results (see above).
        backend: Implementation to use; None selects.

    Returns:
        [T, Hq, D] in `q.dtype`.

    Raises:
        ValueError: a shape, dtype, device or scalar is invalid (the message names the field).
    """
    _check_common(q, k_cache, v_cache, block_tables, seq_lens, scale, sliding_window, sinks)
    check_tensor("cu_seqlens_q", cu_seqlens_q, 1, (torch.int32,))
    check_size("cu_seqlens_q", cu_seqlens_q, 0, seq_lens.shape[0] + 1, "requests + 1")
    check_flag("batch_invariant", batch_invariant)
    check_same_device([("q", q), ("cu_seqlens_q", cu_seqlens_q)])
    check_cu_seqlens(cu_seqlens_q, q.shape[0])
    q_lens = cu_seqlens_q[1:] - cu_seqlens_q[:-1] if cu_seqlens_q.device.type == "cpu" else None
    check_paged_tables(block_tables, seq_lens, k_cache.shape[0], k_cache.shape[1], q_lens)
    block_tables, cu_seqlens_q, seq_lens = block_tables.contiguous(), cu_seqlens_q.contiguous(), seq_lens.contiguous()
    sinks = None if sinks is None else sinks.contiguous()
    return dispatch("paged_attention_prefill", q, backend, q, k_cache, v_cache, block_tables,
                    cu_seqlens_q, seq_lens, scale, sliding_window, sinks,
                    batch_invariant=batch_invariant)


def paged_attention_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float,
                           sliding_window: int | None = None, sinks: torch.Tensor | None = None,
                           split_size: int = DEFAULT_DECODE_SPLIT_SIZE, *,
                           backend: str | None = None) -> torch.Tensor:
    """Attention of one query token per request over the paged KV cache (split-KV).

    Request b's query sits at position `seq_lens[b] - 1` and sees keys as in
    `paged_attention_prefill` (same window and sink semantics). Kernels split the keys into
    chunks of `split_size` tokens and merge the partial softmaxes (FlashDecoding, Dao et al.
    2023); the split SIZE is fixed, so the summation order and hence a row's result do not
    depend on the batch. Requests with `seq_lens[b] == 0` (padding) produce zeros.

    Args:
        q: [B, Hq, D] float32/float16/bfloat16.
        k_cache: [N, S, Hk, D], same dtype as `q`; Hq % Hk == 0.
        v_cache: [N, S, Hk, D], same shape and dtype as `k_cache`.
        block_tables: [B, M] int32.
        seq_lens: [B] int32, 0 <= seq_lens[b] <= M * S (including the query token); block ids
            they use in [0, N). Value ranges are checked on CPU tensors, preconditions elsewhere.
        scale: Logit scale (> 0).
        sliding_window: None or the window W > 0 in tokens.
        sinks: None or [Hq] float logits.
        split_size: KV tokens per split (> 0); does not change the mathematical result.
        backend: Implementation to use; None selects.

    Returns:
        [B, Hq, D] in `q.dtype`.

    Raises:
        ValueError: a shape, dtype, device or scalar is invalid (the message names the field).
    """
    _check_common(q, k_cache, v_cache, block_tables, seq_lens, scale, sliding_window, sinks)
    check_size("seq_lens", seq_lens, 0, q.shape[0], "requests of q")
    if isinstance(split_size, bool) or not isinstance(split_size, int) or split_size <= 0:
        raise ValueError(f"split_size: must be a positive int, got {split_size!r}")
    check_paged_tables(block_tables, seq_lens, k_cache.shape[0], k_cache.shape[1])
    block_tables, seq_lens = block_tables.contiguous(), seq_lens.contiguous()
    sinks = None if sinks is None else sinks.contiguous()
    return dispatch("paged_attention_decode", q, backend, q, k_cache, v_cache, block_tables,
                    seq_lens, scale, sliding_window, sinks, split_size)


def _check_common(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                  block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float,
                  sliding_window: int | None, sinks: torch.Tensor | None) -> None:
    check_tensor("q", q, 3, FLOAT_DTYPES)
    check_tensor("k_cache", k_cache, 4, (q.dtype,))
    check_tensor("v_cache", v_cache, 4, (q.dtype,))
    if v_cache.shape != k_cache.shape:
        raise ValueError(f"v_cache: shape {tuple(v_cache.shape)} != k_cache shape "
                         f"{tuple(k_cache.shape)}")
    check_size("k_cache", k_cache, 3, q.shape[2], "head size of q")
    if q.shape[1] % k_cache.shape[2]:
        raise ValueError(f"q: {q.shape[1]} query heads not a multiple of {k_cache.shape[2]} "
                         f"KV heads")
    check_tensor("block_tables", block_tables, 2, (torch.int32,))
    check_tensor("seq_lens", seq_lens, 1, (torch.int32,))
    check_size("block_tables", block_tables, 0, seq_lens.shape[0], "requests of seq_lens")
    check_positive("scale", scale)
    if k_cache.shape[1] == 0:
        raise ValueError("k_cache: block size (dimension 1) must be > 0")
    if sliding_window is not None and (isinstance(sliding_window, bool) or not isinstance(sliding_window, int)
                                       or sliding_window <= 0):
        raise ValueError(f"sliding_window: must be None or a positive int, got {sliding_window!r}")
    if sinks is not None:
        check_tensor("sinks", sinks, 1, FLOAT_DTYPES)
        check_size("sinks", sinks, 0, q.shape[1], "query heads")
    check_same_device([("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
                       ("block_tables", block_tables), ("seq_lens", seq_lens), ("sinks", sinks)])
