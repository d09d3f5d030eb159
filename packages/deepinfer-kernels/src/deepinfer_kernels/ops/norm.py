# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""RMSNorm, optionally fused with the residual add."""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import dispatch
from deepinfer_kernels.ops._checks import (FLOAT_DTYPES, check_flag, check_positive,
                                           check_same_device, check_size, check_tensor)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float,
             residual: torch.Tensor | None = None, *, batch_invariant: bool = False,
             backend: str | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Root-mean-square layer norm (Zhang & Sennrich 2019), the HF `LlamaRMSNorm` formula.

    Without `residual`: `out = x * rsqrt(mean(x**2, -1) + eps) * weight`, all in float32 and
    rounded once to `x.dtype` (HF rounds the normalised x before the weight product, so in
    16-bit dtypes the two can differ by one unit in the last place).
    With `residual`: first `s = (x + residual)` rounded to `x.dtype`, then `out = rms_norm(s)`;
    returns `(out, s)`, the new residual stream. Functional: no input is modified.
    With `batch_invariant=True`, row t's bits depend only on row t of `x`/`residual` (and
    `weight`): each row's mean square is reduced in one fixed order whatever T is (GPU
    reductions may otherwise split a row across programs when T is small).

    Args:
        x: [T, H] float32/float16/bfloat16. T may be 0.
        weight: [H], same dtype as `x`.
        eps: Added to the mean square, > 0.
        residual: Optional [T, H], same dtype as `x`.
        batch_invariant: Require per-row invariant results (see above).
        backend: Implementation to use (see `deepinfer_kernels.ops`); None selects.

    Returns:
        `out` [T, H] in `x.dtype`, or `(out, s)` when `residual` is given.

    Raises:
        ValueError: a shape, dtype or device does not match, or `batch_invariant` is not a
            bool (the message names the field).
    """
    check_tensor("x", x, 2, FLOAT_DTYPES)
    check_tensor("weight", weight, 1, (x.dtype,))
    check_size("weight", weight, 0, x.shape[1], "hidden size of x")
    check_positive("eps", eps)
    if residual is not None:
        check_tensor("residual", residual, 2, (x.dtype,))
        if residual.shape != x.shape:
            raise ValueError(f"residual: shape {tuple(residual.shape)} != x shape {tuple(x.shape)}")
    check_flag("batch_invariant", batch_invariant)
    check_same_device([("x", x), ("weight", weight), ("residual", residual)])
    return dispatch("rms_norm", x, backend, x, weight, eps, residual,
                    batch_invariant=batch_invariant)
