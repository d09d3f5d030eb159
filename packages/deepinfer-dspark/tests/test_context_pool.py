# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`ContextPool`: the paged draft-context pool equals a plain per-request list of positions under
random writes, crops (rollback), releases and growth, with unwritten entries poisoned."""

from __future__ import annotations

import random

import pytest
import torch

from deepinfer_dspark.context_pool import RESERVE_BYTES, ContextPool, reserve_blocks

L, H, D = 2, 3, 4


def rows(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(L, n, H, D, generator=gen), torch.randn(L, n, H, D, generator=gen)


def poisoned_pool(block_size: int, num_blocks: int) -> ContextPool:
    pool = ContextPool(L, H, D, torch.float32, "cpu", block_size=block_size, num_blocks=num_blocks)
    pool.k.fill_(float("nan"))
    pool.v.fill_(float("nan"))
    return pool


@pytest.mark.parametrize("seed", range(4))
def test_random_operations_equal_a_plain_reference(seed) -> None:
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    pool = poisoned_pool(block_size=rng.choice([1, 4, 8]), num_blocks=2)
    ref: dict[str, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
    generations = [pool.generation]
    for _ in range(120):
        op = rng.random()
        if op < 0.55:                                   # a step: several requests at once
            ids = rng.sample(["a", "b", "c", "d", "e"], rng.randint(1, 4))
            items = [(rid, rng.choice([0, 1, 1, 2, 5, 13])) for rid in ids]
            k, v = rows(sum(n for _, n in items), gen)
            pool.write(items, k, v)
            offset = 0
            for rid, n in items:
                keys, values = ref.setdefault(rid, ([], []))
                keys.extend(k[:, offset + i] for i in range(n))
                values.extend(v[:, offset + i] for i in range(n))
                offset += n
        elif op < 0.8 and ref:                          # rollback
            rid = rng.choice(sorted(ref))
            keep = rng.randint(0, len(ref[rid][0]))
            pool.crop(rid, keep)
            del ref[rid][0][keep:], ref[rid][1][keep:]
        elif ref:                                       # a request ends
            rid = rng.choice(sorted(ref))
            pool.release(rid)
            del ref[rid]
        generations.append(pool.generation)
        assert sorted(pool.request_ids) == sorted(ref)
        for rid, (keys, values) in ref.items():
            got_k, got_v = pool.context(rid)
            assert pool.length(rid) == len(keys) == got_k.shape[1]
            want_k = torch.stack(keys, 1) if keys else torch.empty(L, 0, H, D)
            want_v = torch.stack(values, 1) if values else torch.empty(L, 0, H, D)
            assert torch.equal(got_k, want_k) and torch.equal(got_v, want_v)
        used = sum(len(pool.block_table(rid)) for rid in ref)
        assert used == sum(-(-len(k) // pool.block_size) for k, _ in ref.values())   # no block leaks
        assert used + len(pool._free) == pool.num_blocks
    assert generations[-1] > 0 and generations == sorted(generations)   # it grew, and said so


def test_gather_reads_dense_rows_through_block_tables() -> None:
    gen = torch.Generator().manual_seed(1)
    pool = poisoned_pool(block_size=4, num_blocks=3)
    k, v = rows(11, gen)
    pool.write([("a", 6), ("b", 0), ("c", 5)], k, v)
    index = pool.gather_index(["a", "b", "c"], rows=4, width=8)
    assert len(index) == 4 * 2
    assert index[:2] == pool.block_table("a") and index[2:4] == [0, 0]   # "b": no blocks, padding
    keys, values = pool.gather(torch.tensor(index), rows=4, width=8)
    assert keys.shape == (L, 4, 8, H, D)
    assert torch.equal(keys[:, 0, :6], k[:, :6]) and torch.equal(values[:, 2, :5], v[:, 6:11])
    assert pool.gather_index(["a"], rows=1, width=4) == pool.block_table("a")[:1]   # a prefix only
    assert pool.generation == 1   # 3 blocks were not enough for 2 + 2


def test_errors_name_the_field() -> None:
    pool = ContextPool(L, H, D, torch.float32, "cpu", block_size=4, num_blocks=1)
    k, v = rows(3, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="k: shape"):
        pool.write([("a", 2)], k, v)
    with pytest.raises(ValueError, match="v: torch.float64"):
        pool.write([("a", 3)], k, v.double())
    with pytest.raises(ValueError, match="items: request ids must be distinct"):
        pool.write([("a", 1), ("a", 2)], k, v)
    assert "a" not in pool and pool.num_blocks == 1       # nothing was written
    pool.write([("a", 3)], k, v)
    with pytest.raises(ValueError, match=r"length: must be an int in \[0, 3\]"):
        pool.crop("a", 4)
    with pytest.raises(ValueError, match="request_id: 'b' has no draft context"):
        pool.crop("b", 0)
    with pytest.raises(ValueError, match="request_ids: 2 requests for 1 rows"):
        pool.gather_index(["a", "a"], rows=1, width=4)
    for name, value in (("block_size", 0), ("num_blocks", True)):
        with pytest.raises(ValueError, match=name):
            ContextPool(L, H, D, torch.float32, "cpu", **{name: value})
    pool.release("zzz")                                   # unknown: a no-op


def test_integer_like_lengths_are_accepted_and_named_otherwise() -> None:
    """A numpy or 0-d tensor count works for rollback (it did with the per-request caches); a
    float or a bool is refused by name, with nothing changed."""
    import numpy as np

    pool = ContextPool(L, H, D, torch.float32, "cpu", block_size=4, num_blocks=2)
    k, v = rows(5, torch.Generator().manual_seed(0))
    pool.write([("a", 5)], k, v)
    pool.crop("a", np.int64(4))
    pool.crop("a", torch.tensor(3))
    assert pool.length("a") == 3
    for bad in (2.0, True, "1"):
        with pytest.raises(ValueError, match=r"^length: must be an int in \[0, 3\]"):
            pool.crop("a", bad)
    assert pool.length("a") == 3


def test_reserve_blocks_holds_the_batch_up_to_the_kv_cache_or_the_budget() -> None:
    # 4 requests of 100 positions in blocks of 32: 4 blocks each.
    assert reserve_blocks(4, 100, 32, 1536) == 16
    assert reserve_blocks(1, 1, 32, 1536) == 1
    # SmolLM2's drafter at 256 x 2048 with no KV size given: 768 MiB wanted, the budget reserved.
    blocks = reserve_blocks(256, 2048, 32, 1536)
    assert blocks == RESERVE_BYTES // (1536 * 32) == 5461 and blocks * 32 * 1536 <= RESERVE_BYTES
    # With the KV cache's tokens: no more than it holds, plus a partly filled block a request.
    assert reserve_blocks(256, 2048, 32, 1536, kv_cache_tokens=364_000) == -(-364_000 // 32) + 256
    assert reserve_blocks(4, 100, 32, 1536, kv_cache_tokens=10 ** 9) == 16   # the batch is smaller
    assert reserve_blocks(4, 100, 32, 1536, kv_cache_tokens=0) == 4
    for name, args in (("max_rows", (0, 1, 1, 1)), ("max_length", (1, 0, 1, 1)), ("block_size", (1, 1, 0, 1)),
                       ("bytes_per_position", (1, 1, 1, 0)), ("kv_cache_tokens", (1, 1, 1, 1, -1))):
        with pytest.raises(ValueError, match=name):
            reserve_blocks(*args)


def test_reserve_grows_to_the_size_asked_and_keeps_the_contexts() -> None:
    pool = ContextPool(2, 1, 4, torch.float32, block_size=4, num_blocks=2)
    k = torch.randn(2, 6, 1, 4)
    pool.write([("a", 6)], k, -k)
    before, generation = pool.context("a"), pool.generation
    pool.reserve(2)                     # holds that many already: nothing moves
    assert pool.num_blocks == 2 and pool.generation == generation
    pool.reserve(7)
    assert pool.num_blocks == 7 and pool.generation == generation + 1
    after = pool.context("a")
    assert all(torch.equal(x, y) for x, y in zip(before, after)) and torch.equal(after[0], k)
    pool.write([("b", 20)], torch.ones(2, 20, 1, 4), torch.ones(2, 20, 1, 4))   # 5 more blocks: no growth
    assert pool.num_blocks == 7 and pool.generation == generation + 1
