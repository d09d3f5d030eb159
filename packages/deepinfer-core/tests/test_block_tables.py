# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Persistent block tables: under random admissions, growth, KV rollbacks, finishes and
preemptions, every step's gathered table equals one rebuilt from scratch, and a step copies only
the block ids that changed; through the engine, the runner's rows follow the scheduler's requests.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.executor.block_tables import PersistentBlockTables


def rebuilt(tables: list[list[int]], width: int) -> np.ndarray:
    out = np.zeros((len(tables), width), dtype=np.int64)
    for i, t in enumerate(tables):
        out[i, :len(t)] = t
    return out


def test_random_lifecycle_matches_rebuild_and_copies_only_changes() -> None:
    rng = random.Random(0)
    width, rows = 12, 6
    pt = PersistentBlockTables(rows, width)
    live: dict[str, list[int]] = {}
    next_block, next_id, naive = 0, 0, 0
    for _ in range(400):
        action = rng.random()
        if action < 0.2 and len(live) < rows:  # admission
            live[f"r{next_id}"] = list(range(next_block, next_block + rng.randint(1, 3)))
            next_block += 3
            next_id += 1
        elif action < 0.3 and live:  # finish or preemption: the row is released
            victim = rng.choice(sorted(live))
            pt.release(victim)
            del live[victim]
        elif action < 0.4 and live:  # KV rollback: the table loses its tail
            rid = rng.choice(sorted(live))
            del live[rid][max(1, len(live[rid]) - rng.randint(1, 2)):]
        elif live:  # growth
            rid = rng.choice(sorted(live))
            if len(live[rid]) < width:
                live[rid].append(next_block)
                next_block += 1
        if not live:
            continue
        step = rng.sample(sorted(live), rng.randint(1, len(live)))
        w = max(len(live[r]) for r in step)
        got = pt.gather([pt.sync(r, live[r]) for r in step], w)
        np.testing.assert_array_equal(got, rebuilt([live[r] for r in step], w))
        naive += sum(len(live[r]) for r in step)  # what rebuilding every step would copy
    assert 0 < pt.copied_blocks < naive / 3


def test_rows_are_recycled_and_errors_name_the_field() -> None:
    pt = PersistentBlockTables(2, 4)
    a = pt.sync("a", [1, 2])
    pt.sync("b", [3])
    with pytest.raises(ValueError, match="request_id"):
        pt.sync("c", [4])
    pt.release("a")
    assert pt.sync("c", [5, 6, 7]) == a
    np.testing.assert_array_equal(pt.gather([a], 4), [[5, 6, 7, 0]])
    with pytest.raises(ValueError, match="block_ids"):
        pt.sync("c", [1, 2, 3, 4, 5])
    before = pt.copied_blocks
    pt.sync("c", [5, 6, 7])  # unchanged: nothing copied
    assert pt.copied_blocks == before


def test_engine_keeps_rows_in_step_with_the_scheduler(tiny_checkpoint) -> None:
    folder = tiny_checkpoint("llama")
    probe = LLM(str(folder), max_model_len=96, block_size=4, kv_cache_memory=64 << 20)
    per_block = probe.engine.runner.kv_bytes_per_block()
    llm = LLM(str(folder), max_model_len=96, block_size=4, kv_cache_memory=30 * per_block,
              max_num_batched_tokens=16, max_num_seqs=6)
    rng = random.Random(1)
    prompts = [{"prompt_token_ids": [rng.randrange(250) for _ in range(rng.randint(3, 40))]} for _ in range(10)]
    outs = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=30, ignore_eos=True))
    assert all(o.error is None for o in outs) and llm.engine.num_preemptions > 0
    tables = llm.engine.runner.block_tables
    assert tables.row_of == {}  # every finished or preempted request gave its row back
    tokens = sum(len(p["prompt_token_ids"]) + 30 for p in prompts)
    # Each block is copied once per request life (plus re-prefills after preemption), not once per step.
    assert tables.copied_blocks < 3 * tokens / 4
