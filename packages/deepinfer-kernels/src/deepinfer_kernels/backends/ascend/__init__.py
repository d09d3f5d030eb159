# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The `ascend` backend: Huawei Ascend NPUs through `torch_npu` fused ops.

Registers nothing unless `torch_npu` imports (it is tried when the registry is first built,
at the first op call, never at package import). Ascend tensors live on the "npu" device
type, which torch_npu provides. First kernels: rms_norm (torch_npu.npu_rms_norm) and
silu_and_mul (torch_npu.npu_swiglu); every other op falls back to `reference`.
"""

from __future__ import annotations

import importlib

import torch

from deepinfer_kernels._registry import Impl, Registry

PRIORITY = 30
DEVICE_TYPE = "npu"


def available(device_type: str) -> bool:
    """torch_npu reports a usable NPU."""
    if device_type != DEVICE_TYPE:
        return False
    torch_npu = importlib.import_module("torch_npu")
    return bool(torch_npu.npu.is_available())


def _supports_rms_norm(x, weight, eps, residual, batch_invariant=False) -> bool:
    # npu_rms_norm reads dense rows; its reduction split is not documented, so batch-invariant
    # calls go to the reference.
    return not batch_invariant and x.is_contiguous() and weight.is_contiguous()


def _supports_silu_and_mul(x) -> bool:
    return x.is_contiguous()


def register(registry: Registry) -> None:
    """Declares the Ascend implementations when torch_npu is importable."""
    try:
        importlib.import_module("torch_npu")
    except ImportError:
        return
    floats = (torch.float32, torch.float16, torch.bfloat16)
    registry.register(Impl("rms_norm", "ascend", f"{__name__}.ops:rms_norm", (DEVICE_TYPE,),
                           priority=PRIORITY, dtypes=floats, available=available,
                           supports=_supports_rms_norm))
    registry.register(Impl("silu_and_mul", "ascend", f"{__name__}.ops:silu_and_mul",
                           (DEVICE_TYPE,), priority=PRIORITY, dtypes=floats,
                           available=available, supports=_supports_silu_and_mul))
