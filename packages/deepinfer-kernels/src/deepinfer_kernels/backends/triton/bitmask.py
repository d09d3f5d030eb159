# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton token-bitmask apply: each program masks BLOCK tokens of one row, in place.

Each program reads its BLOCK logits and writes them all back (disallowed ones as -inf):
full-width, vectorised stores cost less than a scattered, per-element-masked store of the
disallowed ones alone (about half of them, in no pattern).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _bitmask_kernel(logits_ptr, bitmask_ptr, indices_ptr, vocab, logits_stride, words,
                    HAS_INDICES: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if HAS_INDICES:
        row = tl.load(indices_ptr + row)
    row = row.to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    in_vocab = offs < vocab
    word = tl.load(bitmask_ptr + row * words + offs // 32, mask=in_vocab, other=-1)
    allowed = ((word >> (offs % 32)) & 1) != 0
    ptrs = logits_ptr + row * logits_stride + offs
    x = tl.load(ptrs, mask=in_vocab)
    tl.store(ptrs, tl.where(allowed, x, float("-inf")).to(x.dtype), mask=in_vocab)


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor,
                        indices: torch.Tensor | None) -> None:
    rows = logits.shape[0] if indices is None else indices.shape[0]
    vocab = logits.shape[1]
    if rows and vocab:
        grid = (rows, triton.cdiv(vocab, BLOCK))
        _bitmask_kernel[grid](logits, bitmask, indices if indices is not None else bitmask,
                              vocab, logits.stride(0), bitmask.shape[1],
                              HAS_INDICES=indices is not None, BLOCK=BLOCK)
