# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Rotary position embedding applied to queries and keys."""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import dispatch
from deepinfer_kernels.ops._checks import (FLOAT_DTYPES, check_flag, check_positive, check_range,
                                           check_same_device, check_size, check_tensor)


def rotary_embedding(positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                     cos_sin: torch.Tensor, is_neox: bool, *, q_norm_weight: torch.Tensor | None = None,
                     k_norm_weight: torch.Tensor | None = None, norm_eps: float | None = None,
                     backend: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotates the first R dimensions of every head of `q` and `k` (RoFormer, Su et al. 2021).

    With `c, s = cos_sin[positions[t]]` split in halves, each pair `(x1, x2)` becomes
    `(x1 * c - x2 * s, x2 * c + x1 * s)`. Pairs are `(x[i], x[i + R/2])` when `is_neox`
    (GPT-NeoX / Llama HF layout) and `(x[2i], x[2i + 1])` otherwise (GPT-J layout).
    Dimensions R..D-1 pass through (partial rotary). Math in float32, rounded once to the
    input dtype. Functional: returns new tensors.

    With `q_norm_weight` / `k_norm_weight` (Qwen3's q_norm / k_norm), each head of q and k is
    first RMS-normalised over its D values, `x * rsqrt(mean(x^2) + norm_eps) * w` in float32
    rounded once to the input dtype (the `rms_norm` op's rule), then rotated: one kernel instead
    of a norm per tensor plus the copies that flattening the strided q/k views costs.

    Args:
        positions: [T] int64, each in [0, P).
        q: [T, Hq, D] float32/float16/bfloat16.
        k: [T, Hk, D], same dtype and head size as `q`.
        cos_sin: [P, R] from `build_rope_cache`, R even and R <= D; float32/float16/bfloat16.
        is_neox: Pair layout (see above).
        q_norm_weight: None or [D] float weights of a per-head RMSNorm on q (with `k_norm_weight`
            and `norm_eps`, all three or none).
        k_norm_weight: None or [D] weights for k.
        norm_eps: the norms' epsilon (> 0).
        backend: Implementation to use; None selects.

    Returns:
        `(q_rot, k_rot)` with the shapes and dtypes of `q` and `k`.

    Raises:
        ValueError: a shape, dtype or device does not match (the message names the field).
    """
    check_tensor("positions", positions, 1, (torch.int64,))
    check_tensor("q", q, 3, FLOAT_DTYPES)
    check_tensor("k", k, 3, (q.dtype,))
    check_size("q", q, 0, positions.shape[0], "tokens of positions")
    check_size("k", k, 0, positions.shape[0], "tokens of positions")
    check_size("k", k, 2, q.shape[2], "head size of q")
    for name, t in (("q", q), ("k", k)):
        if t.shape[1] == 0:
            raise ValueError(f"{name}: needs at least one head, got shape {tuple(t.shape)}")
    check_flag("is_neox", is_neox)
    check_tensor("cos_sin", cos_sin, 2, FLOAT_DTYPES)
    rotary_dim = cos_sin.shape[1]
    if rotary_dim % 2 or rotary_dim > q.shape[2] or rotary_dim == 0:
        raise ValueError(f"cos_sin: rotary dim {rotary_dim} must be even, > 0 and <= head "
                         f"size {q.shape[2]}")
    check_same_device([("q", q), ("k", k), ("positions", positions), ("cos_sin", cos_sin)])
    check_range("positions", positions, 0, cos_sin.shape[0])
    given = [w is not None for w in (q_norm_weight, k_norm_weight, norm_eps)]
    if any(given):
        if not all(given):
            missing = [n for n, g in zip(("q_norm_weight", "k_norm_weight", "norm_eps"), given) if not g]
            raise ValueError(f"{missing[0]}: q_norm_weight, k_norm_weight and norm_eps go together "
                             f"(missing: {', '.join(missing)})")
        for name, w in (("q_norm_weight", q_norm_weight), ("k_norm_weight", k_norm_weight)):
            check_tensor(name, w, 1, FLOAT_DTYPES)
            check_size(name, w, 0, q.shape[2], "head size of q")
        check_positive("norm_eps", norm_eps)
        check_same_device([("q", q), ("q_norm_weight", q_norm_weight), ("k_norm_weight", k_norm_weight)])
        return dispatch("rotary_embedding", q, backend, positions.contiguous(), q, k, cos_sin, is_neox,
                        q_norm_weight.contiguous(), k_norm_weight.contiguous(), float(norm_eps))
    return dispatch("rotary_embedding", q, backend, positions.contiguous(), q, k, cos_sin, is_neox)
