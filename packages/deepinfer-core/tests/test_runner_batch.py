# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Step input flattening (positions, slot mapping, block tables) against a brute-force loop,
and the runner's KV-cache sizing."""

from __future__ import annotations

import random

import pytest
import torch

from deepinfer_core.config import EngineConfig
from deepinfer_core.executor.batch import ScheduledChunk, prepare_inputs
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.loader import load_model_config


def brute_force(chunks, block_size):
    positions, slots, ids, sample_rows, row = [], [], [], [], 0
    for c in chunks:
        for i, t in enumerate(c.token_ids):
            pos = c.start_pos + i
            positions.append(pos)
            slots.append(c.block_ids[pos // block_size] * block_size + pos % block_size)
            ids.append(t)
        row += len(c.token_ids)
        if c.sample:
            sample_rows.append(row - 1)
    return positions, slots, ids, sample_rows


@pytest.mark.parametrize("seed", range(5))
def test_prepare_inputs_matches_brute_force(seed):
    rng = random.Random(seed)
    block_size = rng.choice([1, 4, 16])
    chunks = []
    for _ in range(rng.randint(1, 6)):
        start, n = rng.randint(0, 40), rng.choice([1, 1, rng.randint(1, 30)])
        blocks = rng.sample(range(500), -(-(start + n) // block_size) + rng.randint(0, 2))
        chunks.append(ScheduledChunk([rng.randrange(1000) for _ in range(n)], start, blocks, rng.random() < 0.7))
    step = prepare_inputs(chunks, block_size, "cpu")
    positions, slots, ids, sample_rows = brute_force(chunks, block_size)
    assert step.positions.tolist() == positions and step.positions.dtype == torch.int64
    assert step.meta.slot_mapping.tolist() == slots and step.meta.slot_mapping.dtype == torch.int64
    assert step.input_ids.tolist() == ids and step.sample_indices.tolist() == sample_rows
    meta = step.meta
    assert meta.seq_lens.tolist() == [c.start_pos + len(c.token_ids) for c in chunks]
    assert meta.cu_seqlens_q.tolist() == [0] + list(torch.tensor([len(c.token_ids) for c in chunks]).cumsum(0))
    assert meta.block_tables.dtype == torch.int32 and meta.cu_seqlens_q.dtype == torch.int32
    for b, c in enumerate(chunks):
        assert meta.block_tables[b, :len(c.block_ids)].tolist() == c.block_ids
    assert meta.is_decode_only == all(len(c.token_ids) == 1 for c in chunks)
    assert meta.max_query_len == max(len(c.token_ids) for c in chunks)


@pytest.mark.parametrize("chunk,field", [
    (ScheduledChunk([], 0, [0], True), "token_ids"),
    (ScheduledChunk([1], -1, [0], True), "start_pos"),
    (ScheduledChunk([1, 2, 3], 2, [0], True), "block_ids"),
])
def test_prepare_inputs_rejects_bad_chunks(chunk, field):
    with pytest.raises(ValueError, match=field):
        prepare_inputs([chunk], 4, "cpu")
    with pytest.raises(ValueError, match="chunks"):
        prepare_inputs([], 4, "cpu")


def test_prepare_inputs_rejects_blocks_outside_pool():
    prepare_inputs([ScheduledChunk([1, 2], 0, [7], True)], 4, "cpu", num_blocks=8)
    with pytest.raises(ValueError, match="block_ids: chunk 1"):
        prepare_inputs([ScheduledChunk([1], 0, [0], True), ScheduledChunk([1], 0, [8], True)], 4, "cpu", num_blocks=8)


def test_kv_cache_sized_from_memory_budget(tiny_checkpoint):
    cfg = load_model_config(tiny_checkpoint("qwen3"))
    per_block = 2 * cfg.num_hidden_layers * 4 * cfg.num_key_value_heads * cfg.head_dim * 4  # K+V, fp32
    runner = ModelRunner(cfg, EngineConfig(block_size=4, kv_cache_memory=10 * per_block + 5))
    assert runner.kv_bytes_per_block() == per_block
    with pytest.raises(ValueError, match="kv_caches"):
        runner.execute_model([ScheduledChunk([1], 0, [0], True)])
    assert runner.allocate_kv_cache() == 10
    assert len(runner.kv_caches) == cfg.num_hidden_layers
    k, v = runner.kv_caches[0]
    assert k.shape == v.shape == (10, 4, cfg.num_key_value_heads, cfg.head_dim) and k.dtype == torch.float32
    small = ModelRunner(cfg, EngineConfig(block_size=4, kv_cache_memory=per_block - 1))
    with pytest.raises(ValueError, match="kv_cache_memory"):
        small.allocate_kv_cache()
