# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The `cpu` backend: C++ kernels bound with nanobind (extension `deepinfer_kernels._cpu_ext`,
built from packages/deepinfer-kernels/csrc/cpu by CMake in the wheel and by Bazel).

Available when the extension is importable; selected automatically for CPU tensors, above
`reference`, when its `supports` predicate accepts the call.
"""

from __future__ import annotations

import importlib.util

import torch

from deepinfer_kernels._registry import Impl, Registry

PRIORITY = 10
EXTENSION = "deepinfer_kernels._cpu_ext"


def available(device_type: str) -> bool:
    """The compiled extension is importable (and the tensors are on the CPU)."""
    return device_type == "cpu" and importlib.util.find_spec(EXTENSION) is not None


def linear_available(device_type: str) -> bool:
    """`available`, and the CPU has the instructions of the GEMM (AVX2, FMA, F16C)."""
    if not available(device_type):
        return False
    from deepinfer_kernels import _cpu_ext

    return bool(_cpu_ext.linear_supported())


def _contiguous(*tensors: torch.Tensor | None) -> bool:
    return all(t is None or t.is_contiguous() for t in tensors)


def _supports_decode(q, k_cache, v_cache, block_tables, seq_lens, scale, sliding_window, sinks,
                     split_size) -> bool:
    return (_contiguous(k_cache, v_cache, block_tables, seq_lens)
            and (sinks is None or sinks.dtype == torch.float32))


def _supports_linear(x, weight, bias, batch_invariant=False) -> bool:
    # Only the invariant calls: for the others F.linear (the reference) is faster.
    return batch_invariant and _contiguous(weight, bias)


def _supports_prefill(q, k_cache, v_cache, block_tables, cu_seqlens_q, seq_lens, scale,
                      sliding_window, sinks, batch_invariant=False) -> bool:
    return (batch_invariant and _contiguous(k_cache, v_cache, block_tables, seq_lens)
            and (sinks is None or sinks.dtype == torch.float32))


def _supports_bitmask(logits, bitmask, indices) -> bool:
    return _contiguous(logits, bitmask)


def register(registry: Registry) -> None:
    """Declares the C++ CPU implementations."""
    registry.register(Impl("linear", "cpu", f"{__name__}.ops:linear", devices=("cpu",),
                           priority=PRIORITY, available=linear_available,
                           supports=_supports_linear))
    registry.register(Impl("paged_attention_prefill", "cpu",
                           f"{__name__}.ops:paged_attention_prefill", devices=("cpu",),
                           priority=PRIORITY, dtypes=(torch.float32,), available=available,
                           supports=_supports_prefill))
    registry.register(Impl("paged_attention_decode", "cpu", f"{__name__}.ops:paged_attention_decode",
                           devices=("cpu",), priority=PRIORITY, dtypes=(torch.float32,),
                           available=available, supports=_supports_decode))
    registry.register(Impl("apply_token_bitmask", "cpu", f"{__name__}.ops:apply_token_bitmask",
                           devices=("cpu",), priority=PRIORITY, available=available,
                           supports=_supports_bitmask))
