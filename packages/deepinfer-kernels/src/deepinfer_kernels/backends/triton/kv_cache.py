# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton KV-cache store: one program per token copies its [Hk, D] key and value."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _store_kernel(k_ptr, v_ptr, k_cache_ptr, v_cache_ptr, slot_ptr, k_stride, v_stride,
                  width, BLOCK: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_ptr + token)
    offs = tl.arange(0, BLOCK)
    mask = offs < tl.where(slot >= 0, width, 0)                # padding tokens: no-op
    # A slot's [Hk, D] row is contiguous in a contiguous [N, S, Hk, D] cache.
    k = tl.load(k_ptr + token * k_stride + offs, mask=mask)
    v = tl.load(v_ptr + token * v_stride + offs, mask=mask)
    tl.store(k_cache_ptr + slot * width + offs, k, mask=mask)
    tl.store(v_cache_ptr + slot * width + offs, v, mask=mask)


def store_kv_cache(k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor,
                   v_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    tokens, heads, head = k.shape
    if tokens:
        width = heads * head
        _store_kernel[(tokens,)](k, v, k_cache, v_cache, slot_mapping, k.stride(0),
                                 v.stride(0), width, BLOCK=triton.next_power_of_2(width))
