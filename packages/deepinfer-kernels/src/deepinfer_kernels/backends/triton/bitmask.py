# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton token-bitmask apply: each program masks `WORDS * 32` tokens of one row, in place.

A program loads its `WORDS` mask words once as a vector and expands them to a `[WORDS, 32]`
tile of bits (bit `t % 32` of word `t // 32` = token t allowed), so no word is fetched per
token. Two ways to write, chosen by `BitmaskConfig.store_only`:
  - load/store: read the tile's logits and write them all back, disallowed ones as -inf
    (full-width stores; moves the logits twice);
  - store only: write -inf to the disallowed tokens alone, never reading the logits (byte-masked
    stores; moves them at most once).
The defaults are from `benchmarks/tune_bitmask.py` on an H200 (2026-11-30, see the kernels'
BENCHMARKS.md): load/store with 128 words (4,096 tokens) and 4 warps was fastest on every shape
(B64 x V128256: 10.4 us bf16, 18.8 us fp32, 78-85% of copy bandwidth for the bytes it moves);
store-only was 1.3-4x slower (byte-masked stores of scattered tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl


@dataclass(frozen=True)
class BitmaskConfig:
    """Launch parameters: mask words per program, warps, and the write strategy."""

    words: int = 128
    num_warps: int = 4
    store_only: bool = False

    def __post_init__(self) -> None:
        for name in ("words", "num_warps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value & (value - 1):
                raise ValueError(f"{name}: must be a power of two >= 1, got {value!r}")
        if not isinstance(self.store_only, bool):
            raise ValueError(f"store_only: must be a bool, got {self.store_only!r}")


DEFAULT = BitmaskConfig()


@triton.jit
def _bitmask_kernel(logits_ptr, bitmask_ptr, indices_ptr, vocab, logits_stride, words,
                    HAS_INDICES: tl.constexpr, WORDS: tl.constexpr, STORE_ONLY: tl.constexpr):
    row = tl.program_id(0)
    if HAS_INDICES:
        row = tl.load(indices_ptr + row)
    row = row.to(tl.int64)
    w = tl.program_id(1) * WORDS + tl.arange(0, WORDS)
    word = tl.load(bitmask_ptr + row * words + w, mask=w < words, other=-1)
    bit = tl.arange(0, 32)
    allowed = ((word[:, None] >> bit[None, :]) & 1) != 0                # [WORDS, 32]
    offs = w[:, None] * 32 + bit[None, :]
    in_vocab = offs < vocab
    ptrs = logits_ptr + row * logits_stride + offs
    if STORE_ONLY:
        ninf = tl.full([WORDS, 32], float("-inf"), logits_ptr.dtype.element_ty)
        tl.store(ptrs, ninf, mask=in_vocab & (allowed == 0))
    else:
        x = tl.load(ptrs, mask=in_vocab)
        tl.store(ptrs, tl.where(allowed, x, float("-inf")).to(x.dtype), mask=in_vocab)


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor,
                        indices: torch.Tensor | None, config: BitmaskConfig = DEFAULT) -> None:
    rows = logits.shape[0] if indices is None else indices.shape[0]
    vocab = logits.shape[1]
    if rows and vocab:
        grid = (rows, triton.cdiv(triton.cdiv(vocab, 32), config.words))
        _bitmask_kernel[grid](logits, bitmask, indices if indices is not None else bitmask,
                              vocab, logits.stride(0), bitmask.shape[1],
                              HAS_INDICES=indices is not None, WORDS=config.words,
                              STORE_ONLY=config.store_only, num_warps=config.num_warps)
