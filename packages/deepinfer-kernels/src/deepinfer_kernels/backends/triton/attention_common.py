# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Launch parameters shared by the triton attention kernels."""

from __future__ import annotations

import torch


def dot_precision(dtype: torch.dtype) -> str:
    """float32 inputs use exact IEEE products (no TF32), so they match the reference."""
    return "ieee" if dtype == torch.float32 else "tf32"


def upcast_dots(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether to run every tl.dot in float32 (IEEE).

    NOTE: the triton interpreter (CPU) computes tl.dot on bfloat16 operands wrongly (it
    multiplies the raw bits), so interpreted bfloat16 runs upcast; GPU runs keep 16-bit
    tensor-core dots with float32 accumulation.
    """
    return device.type != "cuda" and dtype == torch.bfloat16


def tile_sizes(device: torch.device) -> tuple[int, int]:
    """(BLOCK_M query rows, BLOCK_N keys) per tile: GPU-sized, or small for the interpreter."""
    return (64, 64) if device.type == "cuda" else (16, 16)
