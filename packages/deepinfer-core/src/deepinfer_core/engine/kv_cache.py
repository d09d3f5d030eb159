# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Device-free paged KV-cache bookkeeping: BlockPool (ids, ref counts) + KVCacheManager (tables).

The KV tensors themselves live in the model runner (`[num_blocks, block_size, H_kv, D]` per
layer); this module only decides which block ids a request owns. Token `i` of a request lives
in block `block_ids[i // block_size]` at offset `i % block_size` (its slot is
`block_id * block_size + offset`).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepinfer_core.engine.request import Request


class BlockPool:
    """A fixed set of KV blocks with reference counts and a free queue.

    A block is free when its reference count is 0. Freed blocks go to the back of the queue and
    allocation takes from the front, so the least recently freed block is reused first: the
    order prefix caching needs to keep recently used blocks around as eviction candidates
    (a later `hash -> block` map can then revive a free block instead of recomputing it).

    Args:
        num_blocks: number of blocks, > 0.

    Raises:
        ValueError: `num_blocks` is not positive.
    """

    def __init__(self, num_blocks: int) -> None:
        if num_blocks <= 0:
            raise ValueError(f"num_blocks must be > 0, got {num_blocks}")
        self.num_blocks = num_blocks
        self._ref_counts = [0] * num_blocks
        self._free: deque[int] = deque(range(num_blocks))

    @property
    def num_free_blocks(self) -> int:
        return len(self._free)

    def ref_count(self, block_id: int) -> int:
        return self._ref_counts[block_id]

    def allocate(self, num_blocks: int) -> list[int]:
        """Takes `num_blocks` free blocks (ref count 1 each).

        Raises:
            RuntimeError: fewer than `num_blocks` blocks are free (callers check first).
        """
        if num_blocks > len(self._free):
            raise RuntimeError(f"BlockPool: asked for {num_blocks} blocks, {len(self._free)} free")
        ids = [self._free.popleft() for _ in range(num_blocks)]
        for block_id in ids:
            self._ref_counts[block_id] = 1
        return ids

    def incref(self, block_ids: list[int]) -> None:
        """Shares already-allocated blocks with one more owner.

        Raises:
            RuntimeError: a block is free.
        """
        for block_id in block_ids:
            if self._ref_counts[block_id] == 0:
                raise RuntimeError(f"BlockPool: incref of free block {block_id}")
            self._ref_counts[block_id] += 1

    def free(self, block_ids: list[int]) -> None:
        """Drops one reference from each block; blocks reaching 0 return to the free queue.

        Raises:
            RuntimeError: a block is already free (a double free).
        """
        for block_id in block_ids:
            count = self._ref_counts[block_id]
            if count == 0:
                raise RuntimeError(f"BlockPool: double free of block {block_id}")
            self._ref_counts[block_id] = count - 1
            if count == 1:
                self._free.append(block_id)


class KVCacheManager:
    """Grows and frees the block tables (`request.block_ids`) of requests.

    Args:
        pool: the shared block pool.
        block_size: tokens per block, > 0.
    """

    def __init__(self, pool: BlockPool, block_size: int) -> None:
        if block_size <= 0:
            raise ValueError(f"block_size must be > 0, got {block_size}")
        self.pool = pool
        self.block_size = block_size

    @property
    def num_free_blocks(self) -> int:
        return self.pool.num_free_blocks

    @property
    def usage(self) -> float:
        """Fraction of blocks in use, in [0, 1]."""
        return 1.0 - self.pool.num_free_blocks / self.pool.num_blocks

    def num_blocks_for(self, num_tokens: int) -> int:
        """Blocks that hold `num_tokens` tokens (ceil division)."""
        return -(-num_tokens // self.block_size)

    def allocate_slots(self, request: Request, num_new_tokens: int) -> bool:
        """Extends the request's block table to cover `num_computed_tokens + num_new_tokens` tokens.

        Returns:
            True on success; False (and nothing changed) when the pool has too few free blocks.
        """
        needed = self.num_blocks_for(request.num_computed_tokens + num_new_tokens) - len(request.block_ids)
        if needed <= 0:
            return True
        if needed > self.pool.num_free_blocks:
            return False
        request.block_ids.extend(self.pool.allocate(needed))
        return True

    def trim(self, request: Request, num_tokens: int) -> None:
        """Frees the blocks past those holding `num_tokens` tokens (KV rollback after rejected drafts).

        Raises:
            ValueError: `num_tokens` is negative.
        """
        if num_tokens < 0:
            raise ValueError(f"num_tokens: must be >= 0, got {num_tokens}")
        keep = self.num_blocks_for(num_tokens)
        if keep < len(request.block_ids):
            self.pool.free(request.block_ids[keep:][::-1])
            del request.block_ids[keep:]

    def free(self, request: Request) -> None:
        """Releases all of the request's blocks (last block first) and empties its table."""
        # Tail blocks first: with prefix caching the shared head of a prompt stays cached longest.
        self.pool.free(request.block_ids[::-1])
        request.block_ids = []
