# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""ContextPool: every request's draft context K/V in one paged pool.

DSpark injects the target's features into each draft layer as extra keys/values (see
`deepinfer_dspark.drafter`). They depend only on the committed tokens' features and positions,
so they are computed once per committed position and kept: position i of a request lives in slot
`block_table[i // B] * B + i % B` of two `[L, num_blocks * B, H_kv, D]` tensors (the paged KV
layout of vLLM's PagedAttention, Kwon et al. 2023, applied to the drafter's context). A step's
new positions, for all requests, are written with one `index_copy_` per tensor (a slot mapping),
and a draft round reads all its rows' contexts with one `index_select` over their block tables,
so neither costs host work per request beyond building the index lists.

The pool grows by doubling its block count when it runs out; the tensors are then reallocated
and `generation` increases (CUDA graphs that read the old tensors must be re-captured).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import torch


RESERVE_BYTES = 256 << 20   # what `reserve_blocks` allocates at most when the KV budget is unknown


def reserve_blocks(max_rows: int, max_length: int, block_size: int, bytes_per_position: int,
                   kv_cache_tokens: int | None = None) -> int:
    """Blocks for an engine's pool to hold up front: what its running requests can hold at once,
    `max_rows` requests of `max_length` positions, and no more than the target's KV cache holds
    (`kv_cache_tokens`, plus one partly filled block a request); without it, at most
    `RESERVE_BYTES`. At least one block.

    Growing the pool later drops every captured draft graph (re-captured mid-serving, ~20 ms
    each on the H200). Sized by the KV cache, the pool costs `bytes_per_position` per target KV
    token: for SmolLM2-135M (23 KiB of target KV a token, 1.5 KiB of drafter context) 6.5% on
    top of the KV budget. Requests that were preempted keep their contexts, so the pool can
    still grow.

    Raises:
        ValueError: a size < 1, or `kv_cache_tokens` < 0 (named).
    """
    for name, value in (("max_rows", max_rows), ("max_length", max_length), ("block_size", block_size),
                        ("bytes_per_position", bytes_per_position)):
        if value < 1:
            raise ValueError(f"{name}: must be >= 1, got {value}")
    wanted = max_rows * -(-max_length // block_size)
    if kv_cache_tokens is None:
        return max(1, min(wanted, RESERVE_BYTES // (bytes_per_position * block_size)))
    if kv_cache_tokens < 0:
        raise ValueError(f"kv_cache_tokens: must be >= 0, got {kv_cache_tokens}")
    return max(1, min(wanted, -(-kv_cache_tokens // block_size) + max_rows))


def integer(value: object) -> int | None:
    """`value` as an int when it is one or integer-like (numpy, a 0-d tensor); None for a bool, a
    float or anything else."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


class ContextPool:
    """Paged `[L, num_blocks, B, H_kv, D]` key and value tensors with per-request block tables.

    Args:
        num_layers: L, draft layers.
        num_kv_heads: H_kv.
        head_dim: D.
        dtype, device: tensor placement.
        block_size: B, positions per block.
        num_blocks: blocks allocated at first (doubled whenever a write needs more).

    Memory: `2 * L * H_kv * D * itemsize` bytes per position (the SmolLM2-135M drafter in bf16:
    2 * 2 * 3 * 64 * 2 = 1.5 KiB; DSpark's Qwen3-8B drafter: 20 KiB), for the positions held
    rounded up to whole blocks, times at most 2 for the doubling.

    Attributes:
        k, v: the pool tensors `[L, num_blocks, B, H_kv, D]`.
        generation: increases each time the tensors are reallocated.

    Raises:
        ValueError: `block_size` or `num_blocks` < 1 (named).
    """

    def __init__(self, num_layers: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype,
                 device: torch.device | str | None = None, block_size: int = 32, num_blocks: int = 64) -> None:
        for name, value in (("block_size", block_size), ("num_blocks", num_blocks)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: must be an int >= 1, got {value!r}")
        self.block_size = block_size
        shape = (num_layers, num_blocks, block_size, num_kv_heads, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.generation = 0
        self._free = list(range(num_blocks - 1, -1, -1))   # pop() hands out block 0 first
        self._tables: dict[str, list[int]] = {}
        self._lengths: dict[str, int] = {}

    @property
    def num_blocks(self) -> int:
        return self.k.shape[1]

    @property
    def request_ids(self) -> list[str]:
        """The registered requests, in registration order."""
        return list(self._lengths)

    def __contains__(self, request_id: str) -> bool:
        return request_id in self._lengths

    def length(self, request_id: str) -> int:
        """Positions held for the request (0 for an unknown request)."""
        return self._lengths.get(request_id, 0)

    def add(self, request_id: str) -> None:
        """Registers a request with no positions (a no-op for a known one)."""
        if request_id not in self._lengths:
            self._tables[request_id] = []
            self._lengths[request_id] = 0

    def block_table(self, request_id: str) -> list[int]:
        """The request's block ids, in position order (a copy).

        Raises:
            ValueError: unknown `request_id`.
        """
        return list(self._table(request_id))

    def write(self, items: Sequence[tuple[str, int]], k: torch.Tensor, v: torch.Tensor) -> None:
        """Appends positions to requests: item `(request_id, n)` takes the next n rows of `k`/`v`
        as its positions `length .. length + n - 1` (unknown requests are added first).

        Args:
            items: `(request_id, n)` in row order; ids distinct.
            k, v: `[L, sum n, H_kv, D]` in the pool's dtype and device.

        Raises:
            ValueError: a shape, dtype or device that does not match, a repeated id or a negative
                n (names `k`/`v`/`items`); nothing is written then.
        """
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for _, n in items):
            raise ValueError(f"items: counts must be ints >= 0, got {[n for _, n in items][:8]}")
        total = sum(n for _, n in items)
        expected = (self.k.shape[0], total) + tuple(self.k.shape[3:])
        for name, t in (("k", k), ("v", v)):
            if tuple(t.shape) != expected:
                raise ValueError(f"{name}: shape {tuple(t.shape)} != expected {expected}")
            if t.dtype != self.k.dtype or t.device != self.k.device:
                raise ValueError(f"{name}: {t.dtype} on {t.device} != pool {self.k.dtype} on {self.k.device}")
        ids = [request_id for request_id, _ in items]
        if len(set(ids)) != len(ids):
            raise ValueError(f"items: request ids must be distinct, got {ids[:8]}")
        if not total:
            for request_id in ids:
                self.add(request_id)
            return
        size = self.block_size
        needed = sum(max(0, -(-(self.length(r) + n) // size) - len(self._tables.get(r, ()))) for r, n in items)
        if needed > len(self._free):
            self._grow(needed - len(self._free))
        slots: list[int] = []
        for request_id, n in items:
            self.add(request_id)
            table, start = self._tables[request_id], self._lengths[request_id]
            while len(table) * size < start + n:
                table.append(self._free.pop())
            position, end = start, start + n
            if n == 1:   # a decode step's row
                slots.append(table[start // size] * size + start % size)
                position = end
            while position < end:   # block by block: a long prefill costs a few ranges, not a loop per row
                offset = position % size
                run = min(size - offset, end - position)
                first = table[position // size] * size + offset
                slots.extend(range(first, first + run))
                position += run
            self._lengths[request_id] = end
        index = torch.tensor(slots, dtype=torch.int64)
        if self.k.device.type == "cuda":   # pinned and non-blocking: no wait for queued kernels
            index = index.pin_memory()
        index = index.to(self.k.device, non_blocking=True)
        flat = (self.k.shape[0], -1) + tuple(self.k.shape[3:])
        self.k.view(flat).index_copy_(1, index, k)
        self.v.view(flat).index_copy_(1, index, v)

    def crop(self, request_id: str, length: int) -> None:
        """Keeps positions `0 .. length - 1` of the request; blocks past them return to the pool.

        Raises:
            ValueError: unknown `request_id`, or `length` outside [0, held length].
        """
        table = self._table(request_id)
        length = integer(length)
        if length is None or not 0 <= length <= self._lengths[request_id]:
            raise ValueError(f"length: must be an int in [0, {self._lengths[request_id]}]")
        keep = -(-length // self.block_size)
        self._free.extend(reversed(table[keep:]))
        del table[keep:]
        self._lengths[request_id] = length

    def release(self, request_id: str) -> None:
        """Forgets the request and frees its blocks (a no-op for an unknown request)."""
        table = self._tables.pop(request_id, None)
        if table is not None:
            self._free.extend(reversed(table))
            del self._lengths[request_id]

    def gather_index(self, request_ids: Sequence[str], rows: int, width: int) -> list[int]:
        """Block ids `[rows * ceil(width / B)]` (row-major) of a dense `[rows, width]` context read:
        row r < len(request_ids) lists its request's blocks covering positions 0..width-1, then
        block 0 as padding (its entries must be hidden by the reader's validity mask), as do rows
        past the requests.

        Raises:
            ValueError: an unknown id, or more ids than `rows`.
        """
        per_row = -(-width // self.block_size)
        if len(request_ids) > rows:
            raise ValueError(f"request_ids: {len(request_ids)} requests for {rows} rows")
        out: list[int] = []
        for request_id in request_ids:
            table = self._table(request_id)[:per_row]
            out.extend(table)
            out.extend([0] * (per_row - len(table)))
        out.extend([0] * (per_row * (rows - len(request_ids))))
        return out

    def gather(self, index: torch.Tensor, rows: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Dense `(keys, values)`, each `[L, rows, width, H_kv, D]`, read through `index` (a
        `gather_index` on the pool's device): one `index_select` per tensor (capturable in a CUDA
        graph while `generation` is unchanged). Entries past a row's length are stale.

        Raises:
            ValueError: `rows` < 1, or an index of another size than `rows * ceil(width / B)`.
        """
        per_row = -(-width // self.block_size)
        if rows < 1 or width < 1 or index.numel() != rows * per_row:
            raise ValueError(f"index: {index.numel()} block ids do not read {rows} rows x {width} positions "
                             f"({per_row} blocks a row)")
        out = []
        for pool in (self.k, self.v):
            dense = pool.index_select(1, index).view((pool.shape[0], rows, per_row * self.block_size) + tuple(pool.shape[3:]))
            out.append(dense[:, :, :width])
        return out[0], out[1]

    def context(self, request_id: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The request's `(keys, values)`, each `[L, length, H_kv, D]` (fresh tensors; for tests
        and inspection).

        Raises:
            ValueError: unknown `request_id`.
        """
        table, length = self._table(request_id), self.length(request_id)
        if not table:
            return self.k[:, :0, 0].clone(), self.v[:, :0, 0].clone()
        index = torch.tensor(table, dtype=torch.int64, device=self.k.device)
        keys, values = self.gather(index, 1, len(table) * self.block_size)
        return keys[:, 0, :length].clone(), values[:, 0, :length].clone()

    def _table(self, request_id: str) -> list[int]:
        table = self._tables.get(request_id)
        if table is None:
            raise ValueError(f"request_id: {request_id!r} has no draft context (observe it first)")
        return table

    def reserve(self, num_blocks: int) -> None:
        """Grows the pool to at least `num_blocks` blocks now (a no-op when it holds that many);
        the held blocks are kept, `generation` increases when the tensors move."""
        if num_blocks > self.num_blocks:
            self._grow(num_blocks - self.num_blocks, exact=True)

    def _grow(self, at_least: int, exact: bool = False) -> None:
        """Doubles the block count (or more, to free `at_least` blocks; with `exact`, adds
        exactly `at_least`); copies the held blocks."""
        old = self.num_blocks
        new = old + at_least if exact else max(2 * old, old + at_least)
        shape = (self.k.shape[0], new) + tuple(self.k.shape[2:])
        for name in ("k", "v"):
            grown = getattr(self, name).new_zeros(shape)
            grown[:, :old] = getattr(self, name)
            setattr(self, name, grown)
        self._free = list(range(new - 1, old - 1, -1)) + self._free
        self.generation += 1
