# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The `cuda` backend: CUDA C++ kernels (csrc/*.cu) for store_kv_cache, rms_norm and
apply_token_bitmask, compiled with nvcc on first use on a GPU and loaded through ctypes
(see build.py). Selected automatically on CUDA devices only where triton is missing: on the
H200 every measured shape ran faster with the triton kernels (BENCHMARKS.md, graph column:
rms_norm T64 x H4096 3.3 us triton vs 13.4 us cuda, store_kv_cache T8192 19.2 vs 55.9 us,
apply_token_bitmask B64 x V128256 10.8 vs 23.0 us), so this backend ranks below triton.
"""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import Impl, Registry

PRIORITY = 10  # below triton (20): slower on every shape measured on the H200


def available(device_type: str) -> bool:
    """A CUDA device of compute capability >= 8.0 and an nvcc to build the library with."""
    if device_type != "cuda" or not torch.cuda.is_available():
        return False
    from deepinfer_kernels.backends.cuda.build import find_nvcc

    return torch.cuda.get_device_capability() >= (8, 0) and find_nvcc() is not None


def _unit_stride(*tensors: torch.Tensor | None) -> bool:
    return all(t is None or t.shape[-1] <= 1 or t.stride(-1) == 1 for t in tensors)


def _supports_rms_norm(x, weight, eps, residual, batch_invariant=False) -> bool:
    # One thread block per row with a fixed-shape reduction: invariant either way.
    return _unit_stride(x, weight, residual) and (weight.numel() <= 1 or weight.is_contiguous())


def _heads_packed(t: torch.Tensor) -> bool:
    return t.numel() == 0 or ((t.shape[2] <= 1 or t.stride(2) == 1)
                              and (t.shape[1] <= 1 or t.stride(1) == t.shape[2]))


def _supports_store(k, v, k_cache, v_cache, slot_mapping) -> bool:
    return (_heads_packed(k) and _heads_packed(v) and k_cache.is_contiguous()
            and v_cache.is_contiguous() and slot_mapping.is_contiguous())


def _supports_bitmask(logits, bitmask, indices) -> bool:
    return _unit_stride(logits) and bitmask.is_contiguous()


def register(registry: Registry) -> None:
    """Declares the CUDA implementations (CUDA devices only)."""
    for op, supports in (("store_kv_cache", _supports_store), ("rms_norm", _supports_rms_norm),
                         ("apply_token_bitmask", _supports_bitmask)):
        registry.register(Impl(op, "cuda", f"{__name__}.ops:{op}", devices=("cuda",),
                               priority=PRIORITY, available=available, supports=supports))
