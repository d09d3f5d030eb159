# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Batch-invariance checks for `batch_invariant=True` calls, on any backend and device.

Each check computes a fixed row (or query) alone, then inside batches of random neighbours
at random positions (or, for attention, in a whole-request prefill, in random chunks and as
one-token calls), and asserts identical bits (`torch.equal`). Shared by the CPU tests, the
triton interpreter tests and GPU runs, so the same definition of invariance is checked
everywhere.
"""

from __future__ import annotations

import torch

from deepinfer_kernels import ops
from deepinfer_kernels.testing.cases_attention import AttnShape, build_paged_kv
from deepinfer_kernels.testing.compare import poison_allocator

SIZES = (2, 3, 4, 5, 7, 8, 9, 16, 33, 64, 65)
"""Batch sizes a fixed row is embedded in (crossing register blocks and 64-row tiles)."""


def embed_row(row: torch.Tensor, size: int, gen: torch.Generator) -> tuple[torch.Tensor, int]:
    """A [size, ...] batch of random normal neighbours with `row[0]` at a random index."""
    batch = torch.randn((size, *row.shape[1:]), generator=gen).to(row.dtype).to(row.device)
    index = int(torch.randint(0, size, (1,), generator=gen))
    batch[index] = row[0]
    return batch, index


def assert_linear_invariant(backend: str, dtype: torch.dtype, device: torch.device | str,
                            in_features: int = 203, out_features: int = 37,
                            bias: bool = True, seed: int = 0,
                            sizes: tuple[int, ...] = SIZES) -> None:
    """`ops.linear(batch_invariant=True)`: a row alone == the row inside every batch size."""
    gen = torch.Generator().manual_seed(seed)
    weight = (torch.randn(out_features, in_features, generator=gen) * in_features ** -0.5
              ).to(dtype).to(device)
    b = torch.randn(out_features, generator=gen).to(dtype).to(device) if bias else None
    row = torch.randn(1, in_features, generator=gen).to(dtype).to(device)
    alone = ops.linear(row, weight, b, batch_invariant=True, backend=backend)
    for size in sizes:
        batch, index = embed_row(row, size, gen)
        poison_allocator(device)
        out = ops.linear(batch, weight, b, batch_invariant=True, backend=backend)
        assert torch.equal(out[index:index + 1], alone), \
            f"linear[{backend}, {dtype}]: row {index} of a batch of {size} differs from alone"


def linear_variant_sizes(dtype: torch.dtype, device: torch.device | str,
                         in_features: int = 576, out_features: int = 576, seed: int = 0,
                         sizes: tuple[int, ...] = SIZES) -> list[int]:
    """Batch sizes at which the default path (`batch_invariant=False`) changes a row's bits.

    The negative control of the invariance tests: an empty list means the platform's GEMM
    happens to be invariant for these shapes.
    """
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(out_features, in_features, generator=gen).to(dtype).to(device)
    row = torch.randn(1, in_features, generator=gen).to(dtype).to(device)
    alone = ops.linear(row, weight, backend="reference")
    changed = []
    for size in sizes:
        batch, index = embed_row(row, size, gen)
        if not torch.equal(ops.linear(batch, weight, backend="reference")[index:index + 1], alone):
            changed.append(size)
    return changed


def assert_rms_norm_invariant(backend: str, dtype: torch.dtype, device: torch.device | str,
                              hidden: int = 576, residual: bool = True, seed: int = 0,
                              sizes: tuple[int, ...] = SIZES) -> None:
    """`ops.rms_norm(batch_invariant=True)`: a row alone == the row inside every batch size."""
    gen = torch.Generator().manual_seed(seed)
    weight = (torch.randn(hidden, generator=gen) * 0.5 + 1).to(dtype).to(device)
    row = torch.randn(1, 2 * hidden, generator=gen).to(dtype).to(device)   # x | residual

    def run(x2: torch.Tensor):
        x, res = x2[:, :hidden].contiguous(), x2[:, hidden:].contiguous()
        out = ops.rms_norm(x, weight, 1e-6, res if residual else None, batch_invariant=True,
                           backend=backend)
        return out if residual else (out,)

    alone = run(row)
    for size in sizes:
        batch, index = embed_row(row, size, gen)
        poison_allocator(device)
        for got, want in zip(run(batch), alone):
            assert torch.equal(got[index:index + 1], want), \
                f"rms_norm[{backend}, {dtype}]: row {index} of a batch of {size} differs"


def assert_prefill_invariant(backend: str, dtype: torch.dtype, device: torch.device | str,
                             length: int = 37, window: int | None = None, sinks: bool = False,
                             q_heads: int = 4, kv_heads: int = 2, head_size: int = 16,
                             block_size: int = 4, seed: int = 0) -> None:
    """`ops.paged_attention_prefill(batch_invariant=True)` on one request of `length` tokens.

    Its queries are computed (1) in one prefill call beside random neighbour requests,
    (2) in random chunks (q_len < length, seq_len = chunk end) beside random neighbours,
    (3) one by one as one-token calls with seq_len = position + 1, alone. All three must give
    identical bits for every query.
    """
    gen = torch.Generator().manual_seed(seed)
    neighbours = [int(n) for n in torch.randint(1, 2 * length, (3,), generator=gen)]
    shape = AttnShape(tuple((s, s) for s in [length] + neighbours), q_heads, kv_heads,
                      head_size, block_size, window, sinks)
    k_cache, v_cache, table = build_paged_kv(shape, dtype, torch.device(device), gen)
    sink = (torch.randn(q_heads, generator=gen).to(device) if sinks else None)
    q = torch.randn(length, q_heads, head_size, generator=gen).to(dtype).to(device)
    scale = head_size ** -0.5

    def call(target: tuple[int, int]) -> torch.Tensor:
        """Prefill of the target's queries [start, end) (seq_len end) among random neighbours."""
        parts = []                       # (request, q rows, seq_len)
        for b, full in enumerate(neighbours, start=1):
            seq = int(torch.randint(1, full + 1, (1,), generator=gen))
            q_len = int(torch.randint(1, seq + 1, (1,), generator=gen))
            rows = torch.randn(q_len, q_heads, head_size, generator=gen).to(dtype).to(device)
            parts.append((b, rows, seq))
        at = int(torch.randint(0, len(parts) + 1, (1,), generator=gen))
        parts.insert(at, (0, q[target[0]:target[1]], target[1]))
        return _prefill(backend, parts, k_cache, v_cache, table, scale, window, sink, at)

    whole = call((0, length))
    cuts = sorted(set(torch.randint(1, length, (4,), generator=gen).tolist()))
    chunked = torch.cat([call((a, b)) for a, b in zip([0] + cuts, cuts + [length])])
    one_by_one = torch.cat([
        _prefill(backend, [(0, q[i:i + 1], i + 1)], k_cache, v_cache, table, scale, window,
                 sink, 0) for i in range(length)])
    name = f"prefill[{backend}, {dtype}, window={window}, sinks={sinks}]"
    assert torch.equal(whole, chunked), f"{name}: chunked prefill differs from one call"
    assert torch.equal(whole, one_by_one), f"{name}: one-token calls differ from one call"


def _prefill(backend: str, parts: list[tuple[int, torch.Tensor, int]], k_cache: torch.Tensor,
             v_cache: torch.Tensor, table: torch.Tensor, scale: float, window: int | None,
             sinks: torch.Tensor | None, target_index: int) -> torch.Tensor:
    """One batch-invariant prefill call over `parts`; returns the rows of part `target_index`."""
    device = k_cache.device
    q = torch.cat([rows for _, rows, _ in parts])
    q_lens = [rows.shape[0] for _, rows, _ in parts]
    cu = torch.tensor([0] + q_lens).cumsum(0).to(torch.int32).to(device)
    seq_lens = torch.tensor([seq for _, _, seq in parts], dtype=torch.int32).to(device)
    tables = table[torch.tensor([b for b, _, _ in parts]).to(device)].contiguous()
    poison_allocator(device)
    out = ops.paged_attention_prefill(q, k_cache, v_cache, tables, cu, seq_lens, scale, window,
                                      sinks, batch_invariant=True, backend=backend)
    return out.split(q_lens)[target_index]
