# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Structured-output vocabulary masks."""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import dispatch
from deepinfer_kernels.ops._checks import FLOAT_DTYPES, check_range, check_same_device, check_tensor


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor,
                        indices: torch.Tensor | None = None, *,
                        backend: str | None = None) -> None:
    """Sets the logits of disallowed tokens to -inf. In place on `logits`.

    Token `t` is allowed in row `r` when bit `t % 32` (least significant first) of word
    `bitmask[r, t // 32]` is set: the packed layout of xgrammar and llguidance. Words past
    `ceil(V / 32)` and bits past V are ignored.

    Args:
        logits: [B, V] float32/float16/bfloat16.
        bitmask: [B, W] int32 with W >= ceil(V / 32); row r masks logits row r.
        indices: Optional [B'] int32/int64: only these rows (of both tensors) are masked;
            None masks every row. Indices must be distinct and in [0, B).
        backend: Implementation to use; None selects.

    Raises:
        ValueError: a shape, dtype or device does not match (the message names the field).
    """
    check_tensor("logits", logits, 2, FLOAT_DTYPES)
    check_tensor("bitmask", bitmask, 2, (torch.int32,))
    if bitmask.shape[0] != logits.shape[0]:
        raise ValueError(f"bitmask: {bitmask.shape[0]} rows, logits has {logits.shape[0]}")
    if bitmask.shape[1] * 32 < logits.shape[1]:
        raise ValueError(f"bitmask: {bitmask.shape[1]} words cover {bitmask.shape[1] * 32} "
                         f"tokens, logits has {logits.shape[1]}")
    if indices is not None:
        check_tensor("indices", indices, 1, (torch.int32, torch.int64))
    check_same_device([("logits", logits), ("bitmask", bitmask), ("indices", indices)])
    check_range("indices", indices, 0, logits.shape[0])
    dispatch("apply_token_bitmask", logits, backend, logits, bitmask,
             None if indices is None else indices.contiguous())
