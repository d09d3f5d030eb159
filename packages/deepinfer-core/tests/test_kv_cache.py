# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""BlockPool and KVCacheManager against a brute-force model of reference counting."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from deepinfer_core.engine.kv_cache import BlockPool, KVCacheManager
from deepinfer_core.engine.request import Request
from deepinfer_core.sampling_params import SamplingParams


def make_request(rid: str, prompt_len: int) -> Request:
    return Request(rid, list(range(1, prompt_len + 1)), SamplingParams(), arrival=int(rid), eos_token_id=None)


def test_allocate_and_free_track_ref_counts() -> None:
    pool = BlockPool(8)
    a = pool.allocate(3)
    assert len(set(a)) == 3 and pool.num_free_blocks == 5
    assert all(pool.ref_count(b) == 1 for b in a)
    pool.incref(a[:2])
    assert [pool.ref_count(b) for b in a] == [2, 2, 1]
    pool.free(a)
    assert [pool.ref_count(b) for b in a] == [1, 1, 0]
    assert pool.num_free_blocks == 6  # only the block that reached 0 came back
    pool.free(a[:2])
    assert pool.num_free_blocks == 8
    with pytest.raises(RuntimeError, match="double free"):
        pool.free([a[0]])
    with pytest.raises(RuntimeError, match="incref of free block"):
        pool.incref([a[0]])
    with pytest.raises(RuntimeError, match="asked for 9 blocks"):
        pool.allocate(9)


def test_freed_blocks_are_reused_last() -> None:
    pool = BlockPool(4)
    first = pool.allocate(2)
    pool.free(first)
    # The two never-used blocks come first; the just-freed ones go to the back of the queue.
    assert set(pool.allocate(2)).isdisjoint(first)
    assert pool.allocate(2) == first


def test_pool_matches_brute_force_refcount_model() -> None:
    rng = random.Random(1234)
    pool = BlockPool(16)
    model: Counter[int] = Counter()  # block -> references, the independent bookkeeping
    held: list[int] = []  # one entry per reference
    for _ in range(2000):
        op = rng.random()
        if op < 0.4:
            n = rng.randint(1, 4)
            if n <= 16 - len(+model):
                ids = pool.allocate(n)
                assert not any(model[b] for b in ids), "allocated a block still referenced"
                model.update(ids)
                held.extend(ids)
            else:
                with pytest.raises(RuntimeError):
                    pool.allocate(n)
        elif op < 0.6 and held:
            b = rng.choice(held)
            pool.incref([b])
            model[b] += 1
            held.append(b)
        elif held:
            b = held.pop(rng.randrange(len(held)))
            pool.free([b])
            model[b] -= 1
        assert pool.num_free_blocks == 16 - len(+model)
        assert all(pool.ref_count(b) == model[b] for b in range(16))


def test_allocate_slots_grows_tables_by_ceil_division() -> None:
    kv = KVCacheManager(BlockPool(10), block_size=4)
    req = make_request("1", 9)
    assert kv.allocate_slots(req, 9)
    assert len(req.block_ids) == 3  # ceil(9 / 4)
    req.num_computed_tokens = 9
    for total in range(10, 17):  # decode one token at a time
        assert kv.allocate_slots(req, 1)
        assert len(req.block_ids) == -(-total // 4)
        req.num_computed_tokens = total
    assert len(req.block_ids) == 4 and kv.num_free_blocks == 6


def test_allocate_slots_failure_changes_nothing() -> None:
    kv = KVCacheManager(BlockPool(3), block_size=4)
    a, b = make_request("1", 8), make_request("2", 8)
    assert kv.allocate_slots(a, 8)
    before = list(b.block_ids)
    assert not kv.allocate_slots(b, 8)  # needs 2 blocks, 1 free
    assert b.block_ids == before and kv.num_free_blocks == 1
    kv.free(a)
    assert a.block_ids == [] and kv.num_free_blocks == 3
    assert kv.allocate_slots(b, 8) and len(b.block_ids) == 2
    assert kv.usage == pytest.approx(2 / 3)


def test_invalid_sizes_raise() -> None:
    with pytest.raises(ValueError, match="num_blocks"):
        BlockPool(0)
    with pytest.raises(ValueError, match="block_size"):
        KVCacheManager(BlockPool(1), block_size=0)
