# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Cases for paged attention (prefill and decode).

Every cache slot that does not hold a valid key/value of some request is NaN, and unused
block-table entries point at an all-NaN block: a kernel that reads (without masking) past
a request's `seq_len` or outside its window turns its output into NaN and fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from deepinfer_kernels.testing.case import OpCase, randn, randperm

INTERP = frozenset({"interp"})


@dataclass(frozen=True)
class AttnShape:
    """Per-request (q_len, seq_len) plus head layout and cache geometry."""

    requests: tuple[tuple[int, int], ...]
    q_heads: int
    kv_heads: int
    head_size: int
    block_size: int
    window: int | None = None
    sinks: bool = False
    split_size: int = 16

    def name(self) -> str:
        reqs = "-".join(f"{q}of{s}" for q, s in self.requests) or "empty"
        extra = (f"_W{self.window}" if self.window else "") + ("_sinks" if self.sinks else "")
        return (f"{reqs}_Hq{self.q_heads}_Hk{self.kv_heads}_D{self.head_size}"
                f"_S{self.block_size}{extra}")


def build_paged_kv(shape: AttnShape, dtype: torch.dtype, device: torch.device,
                   gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(k_cache, v_cache, block_tables) with random valid entries and NaN everywhere else."""
    size = shape.block_size
    needed = [-(-seq // size) for _, seq in shape.requests]
    num_blocks = sum(needed) + 2
    width = max(needed, default=0) + 1
    poison_block = num_blocks - 1
    order = randperm(gen, num_blocks - 1, torch.device("cpu"))
    table = torch.full((len(shape.requests), width), poison_block, dtype=torch.int32)
    geometry = (num_blocks, size, shape.kv_heads, shape.head_size)
    k_cache = torch.full(geometry, float("nan"))
    v_cache = torch.full(geometry, float("nan"))
    used = 0
    for b, (_, seq) in enumerate(shape.requests):
        blocks = order[used:used + needed[b]]
        used += needed[b]
        table[b, :needed[b]] = blocks.to(torch.int32)
        for j in range(seq):
            block, row = blocks[j // size], j % size
            k_cache[block, row] = torch.randn(shape.kv_heads, shape.head_size, generator=gen)
            v_cache[block, row] = torch.randn(shape.kv_heads, shape.head_size, generator=gen)
    return k_cache.to(dtype).to(device), v_cache.to(dtype).to(device), table.to(device)


def _sinks(shape: AttnShape, device: torch.device, gen: torch.Generator) -> torch.Tensor | None:
    return randn(gen, (shape.q_heads,), torch.float32, device) if shape.sinks else None


def prefill_case(shape: AttnShape, tags: frozenset[str] = frozenset(),
                 batch_invariant: bool = False) -> OpCase:
    def build(dtype, device, gen):
        k_cache, v_cache, table = build_paged_kv(shape, dtype, device, gen)
        q_lens = [q for q, _ in shape.requests]
        cu = torch.tensor([0] + q_lens, dtype=torch.int64).cumsum(0).to(torch.int32).to(device)
        seq_lens = torch.tensor([s for _, s in shape.requests], dtype=torch.int32).to(device)
        q = randn(gen, (sum(q_lens), shape.q_heads, shape.head_size), dtype, device)
        args = (q, k_cache, v_cache, table, cu, seq_lens, shape.head_size ** -0.5,
                shape.window, _sinks(shape, device, gen))
        return args, ({"batch_invariant": True} if batch_invariant else {})
    name = shape.name() + ("_bi" if batch_invariant else "")
    return OpCase("paged_attention_prefill", name, build, tags=tags)


def decode_case(shape: AttnShape, tags: frozenset[str] = frozenset()) -> OpCase:
    def build(dtype, device, gen):
        k_cache, v_cache, table = build_paged_kv(shape, dtype, device, gen)
        seq_lens = torch.tensor([s for _, s in shape.requests], dtype=torch.int32).to(device)
        q = randn(gen, (len(shape.requests), shape.q_heads, shape.head_size), dtype, device)
        args = (q, k_cache, v_cache, table, seq_lens, shape.head_size ** -0.5, shape.window,
                _sinks(shape, device, gen), shape.split_size)
        return args, {}
    name = f"{shape.name()}_split{shape.split_size}"
    return OpCase("paged_attention_decode", name, build, tags=tags)


def paged_attention_prefill_cases() -> list[OpCase]:
    mixed = ((17, 40), (1, 33), (32, 32), (0, 5), (9, 100))
    return [
        prefill_case(AttnShape((), 2, 1, 16, 4), INTERP),
        prefill_case(AttnShape(((5, 5),), 2, 1, 16, 4), INTERP),
        prefill_case(AttnShape(((3, 7), (1, 9), (0, 4), (4, 4)), 2, 1, 16, 4), INTERP),
        prefill_case(AttnShape(((3, 7), (2, 9)), 2, 2, 16, 4, window=3, sinks=True), INTERP),
        prefill_case(AttnShape(mixed, 8, 2, 64, 16)),
        prefill_case(AttnShape(mixed, 8, 2, 64, 16, window=8)),
        prefill_case(AttnShape(mixed, 4, 4, 128, 16, sinks=True)),
        prefill_case(AttnShape(((13, 29), (7, 7)), 6, 2, 80, 8, window=11, sinks=True)),
        prefill_case(AttnShape(((5, 5),), 2, 1, 16, 4), INTERP, batch_invariant=True),
        prefill_case(AttnShape(((3, 7), (0, 4), (20, 23)), 4, 2, 16, 4, window=5, sinks=True),
                     INTERP, batch_invariant=True),
        prefill_case(AttnShape(mixed, 8, 2, 64, 16, window=8), batch_invariant=True),
        prefill_case(AttnShape(((13, 29), (7, 7)), 6, 2, 80, 8, sinks=True), batch_invariant=True),
    ]


def paged_attention_decode_cases() -> list[OpCase]:
    lens = ((1, 1), (1, 33), (1, 100), (1, 257))
    return [
        decode_case(AttnShape((), 2, 1, 16, 4, split_size=4), INTERP),
        decode_case(AttnShape(((1, 5), (1, 1), (1, 9)), 2, 1, 16, 4, split_size=4), INTERP),
        decode_case(AttnShape(((1, 0), (1, 3)), 2, 2, 16, 4, split_size=8), INTERP),
        decode_case(AttnShape(((1, 9), (1, 6)), 4, 2, 16, 4, window=5, sinks=True,
                              split_size=4), INTERP),
        decode_case(AttnShape(lens, 8, 2, 64, 16, split_size=32)),
        decode_case(AttnShape(lens, 8, 2, 64, 16, window=20, split_size=32)),
        decode_case(AttnShape(lens, 4, 4, 128, 16, sinks=True, split_size=256)),
        decode_case(AttnShape(((1, 29), (1, 0), (1, 71)), 6, 2, 80, 8, window=11, sinks=True,
                              split_size=16)),
    ]
