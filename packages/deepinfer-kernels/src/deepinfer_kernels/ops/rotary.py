# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Rotary position embedding applied to queries and keys."""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import dispatch
from deepinfer_kernels.ops._checks import (FLOAT_DTYPES, check_range, check_same_device, check_size,
                                           check_tensor)


def rotary_embedding(positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                     cos_sin: torch.Tensor, is_neox: bool, *, backend: str | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotates the first R dimensions of every head of `q` and `k` (RoFormer, Su et al. 2021).

    With `c, s = cos_sin[positions[t]]` split in halves, each pair `(x1, x2)` becomes
    `(x1 * c - x2 * s, x2 * c + x1 * s)`. Pairs are `(x[i], x[i + R/2])` when `is_neox`
    (GPT-NeoX / Llama HF layout) and `(x[2i], x[2i + 1])` otherwise (GPT-J layout).
    Dimensions R..D-1 pass through (partial rotary). Math in float32, rounded once to the
    input dtype. Functional: returns new tensors.

    Args:
        positions: [T] int64, each in [0, P).
        q: [T, Hq, D] float32/float16/bfloat16.
        k: [T, Hk, D], same dtype and head size as `q`.
        cos_sin: [P, R] from `build_rope_cache`, R even and R <= D; float32/float16/bfloat16.
        is_neox: Pair layout (see above).
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
    check_tensor("cos_sin", cos_sin, 2, FLOAT_DTYPES)
    rotary_dim = cos_sin.shape[1]
    if rotary_dim % 2 or rotary_dim > q.shape[2] or rotary_dim == 0:
        raise ValueError(f"cos_sin: rotary dim {rotary_dim} must be even, > 0 and <= head "
                         f"size {q.shape[2]}")
    check_same_device([("q", q), ("k", k), ("positions", positions), ("cos_sin", cos_sin)])
    check_range("positions", positions, 0, cos_sin.shape[0])
    return dispatch("rotary_embedding", q, backend, positions.contiguous(), q, k, cos_sin, is_neox)
