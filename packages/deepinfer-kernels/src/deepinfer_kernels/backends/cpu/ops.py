# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Python side of the `cpu` backend: allocate outputs, call into `_cpu_ext`."""

from __future__ import annotations

import torch

from deepinfer_kernels import _cpu_ext

_RAW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
_LINEAR_TYPE = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}   # csrc LinearInput


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
           batch_invariant: bool = False) -> torch.Tensor:
    # NOTE: x is converted to float32 once (exact) and the weight is read in its own dtype;
    # float32 accumulation, one rounding to x.dtype at the end (torch's round to nearest even).
    x32 = x.to(torch.float32).contiguous()
    out = torch.empty((x.shape[0], weight.shape[0]), dtype=torch.float32)
    bias32 = bias.float().contiguous() if bias is not None else torch.empty(0)
    raw = weight if weight.dtype == torch.float32 else weight.view(torch.int16)
    bind = _cpu_ext.linear_f32 if weight.dtype == torch.float32 else _cpu_ext.linear_16
    bind(x32, raw, bias32, bias is not None, out, _LINEAR_TYPE[weight.dtype],
         torch.get_num_threads())
    return out.to(x.dtype)


def paged_attention_prefill(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                            block_tables: torch.Tensor, cu_seqlens_q: torch.Tensor,
                            seq_lens: torch.Tensor, scale: float, sliding_window: int | None,
                            sinks: torch.Tensor | None, batch_invariant: bool = False
                            ) -> torch.Tensor:
    # NOTE: every query runs the decode routine with seq_len = its position + 1 (batch
    # invariant by construction), whether or not batch_invariant was asked for.
    q_lens = cu_seqlens_q[1:] - cu_seqlens_q[:-1]
    if bool((seq_lens < q_lens).any()):
        raise ValueError("seq_lens: shorter than the request's queries (cu_seqlens_q)")
    q = q.contiguous()
    out = torch.empty_like(q)
    if q.shape[0]:
        empty = torch.empty(0, dtype=torch.float32)
        _cpu_ext.paged_attention_prefill_f32(q, k_cache, v_cache, block_tables,
                                             cu_seqlens_q.contiguous(), seq_lens,
                                             sinks if sinks is not None else empty,
                                             sinks is not None, out, scale, sliding_window or 0)
    return out


def paged_attention_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float,
                           sliding_window: int | None, sinks: torch.Tensor | None,
                           split_size: int) -> torch.Tensor:
    # NOTE: one sequential pass per (request, head); split_size only matters to parallel
    # kernels, the result is batch invariant either way.
    q = q.contiguous()
    out = torch.empty_like(q)
    if q.shape[0]:
        empty = torch.empty(0, dtype=torch.float32)
        _cpu_ext.paged_attention_decode_f32(q, k_cache, v_cache, block_tables, seq_lens,
                                            sinks if sinks is not None else empty,
                                            sinks is not None, out, scale, sliding_window or 0)
    return out


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor,
                        indices: torch.Tensor | None) -> None:
    rows = (torch.arange(logits.shape[0]) if indices is None else indices.to(torch.int64)
            ).contiguous()
    if rows.numel() == 0 or logits.shape[1] == 0:
        return
    raw = _RAW[logits.dtype]
    neg_inf = int(torch.tensor(float("-inf"), dtype=logits.dtype).view(raw))
    bind = _cpu_ext.apply_token_bitmask_32 if raw == torch.int32 else _cpu_ext.apply_token_bitmask_16
    bind(logits.view(raw), logits.shape[1], neg_inf, bitmask, rows)
