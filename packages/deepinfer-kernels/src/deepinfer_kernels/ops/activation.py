# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Gated activations."""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import dispatch
from deepinfer_kernels.ops._checks import FLOAT_DTYPES, check_tensor


def silu_and_mul(x: torch.Tensor, *, backend: str | None = None) -> torch.Tensor:
    """SwiGLU gate (Shazeer 2020, "GLU Variants Improve Transformer"): `silu(a) * b`.

    `x` holds the fused gate/up projection: `a = x[:, :I]` (gate), `b = x[:, I:]` (up).
    Computed in float32, rounded once to `x.dtype`. Functional.

    Args:
        x: [T, 2I] float32/float16/bfloat16; T may be 0.
        backend: Implementation to use; None selects.

    Returns:
        [T, I] in `x.dtype`.

    Raises:
        ValueError: `x` is not 2-D, has an odd last dimension, or an unsupported dtype.
    """
    check_tensor("x", x, 2, FLOAT_DTYPES)
    if x.shape[1] % 2:
        raise ValueError(f"x: last dimension must be even (gate and up halves), got {x.shape[1]}")
    return dispatch("silu_and_mul", x, backend, x)
