# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Writing a step's keys and values into the paged KV cache."""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import dispatch
from deepinfer_kernels.ops._checks import (FLOAT_DTYPES, check_range, check_same_device, check_size,
                                           check_tensor)


def store_kv_cache(k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor,
                   v_cache: torch.Tensor, slot_mapping: torch.Tensor, *,
                   backend: str | None = None) -> None:
    """Scatters each token's key and value into its cache slot. In place on the caches.

    Slot `s` is row `s % S` of block `s // S` (S = block size), the vLLM slot-mapping
    convention. Tokens with `slot_mapping < 0` (padding) are skipped. Two tokens mapping to
    the same slot give an unspecified winner.

    Args:
        k: [T, Hk, D] float32/float16/bfloat16.
        v: [T, Hk, D], same dtype as `k`.
        k_cache: [N, S, Hk, D] (N blocks of S slots), same dtype as `k`.
        v_cache: [N, S, Hk, D], same shape and dtype as `k_cache`.
        slot_mapping: [T] int64, each < N * S (negative: skipped). Checked on CPU tensors;
            a precondition on accelerators.
        backend: Implementation to use; None selects.

    Raises:
        ValueError: a shape, dtype or device does not match (the message names the field).
    """
    check_tensor("k", k, 3, FLOAT_DTYPES)
    check_tensor("v", v, 3, (k.dtype,))
    if v.shape != k.shape:
        raise ValueError(f"v: shape {tuple(v.shape)} != k shape {tuple(k.shape)}")
    check_tensor("k_cache", k_cache, 4, (k.dtype,))
    check_tensor("v_cache", v_cache, 4, (k.dtype,))
    if v_cache.shape != k_cache.shape:
        raise ValueError(f"v_cache: shape {tuple(v_cache.shape)} != k_cache shape "
                         f"{tuple(k_cache.shape)}")
    check_size("k_cache", k_cache, 2, k.shape[1], "KV heads of k")
    check_size("k_cache", k_cache, 3, k.shape[2], "head size of k")
    check_tensor("slot_mapping", slot_mapping, 1, (torch.int64,))
    check_size("slot_mapping", slot_mapping, 0, k.shape[0], "tokens of k")
    check_same_device([("k", k), ("v", v), ("k_cache", k_cache), ("v_cache", v_cache),
                       ("slot_mapping", slot_mapping)])
    if k_cache.shape[1] == 0:
        raise ValueError("k_cache: block size (dimension 1) must be > 0")
    check_range("slot_mapping", slot_mapping, None, k_cache.shape[0] * k_cache.shape[1])
    dispatch("store_kv_cache", k, backend, k, v, k_cache, v_cache, slot_mapping.contiguous())
