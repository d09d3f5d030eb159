# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""CPU checks of the CUDA-graph decode ladder and padding (the capture itself needs CUDA)."""

from __future__ import annotations

import pytest
import torch

from deepinfer_core.config import EngineConfig
from deepinfer_core.executor.batch import ScheduledChunk, prepare_inputs
from deepinfer_core.executor.cuda_graph import DecodeBuffers, capture_sizes, pick_size
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.loader import load_model_config

BLOCK = 4


def test_capture_sizes_ladder():
    assert capture_sizes(64) == [1, 2, 4, 8, 16, 24, 32, 48, 64]
    assert capture_sizes(128) == [1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128]
    assert capture_sizes(20) == [1, 2, 4, 8, 16, 20]
    assert capture_sizes(1) == [1]
    with pytest.raises(ValueError, match="max_num_seqs"):
        capture_sizes(0)


@pytest.mark.parametrize("batch,size", [(1, 1), (3, 4), (9, 16), (17, 24), (33, 48), (64, 64), (65, None)])
def test_pick_size(batch, size):
    assert pick_size(capture_sizes(64), batch) == size


def decode_chunks(rng: torch.Generator, batch: int, num_blocks: int) -> list[ScheduledChunk]:
    chunks = []
    perm = torch.randperm(num_blocks, generator=rng).tolist()
    for i in range(batch):
        start = int(torch.randint(0, 3 * BLOCK, (1,), generator=rng))
        need = start // BLOCK + 1
        blocks, perm = perm[:need], perm[need:]
        chunks.append(ScheduledChunk([int(torch.randint(3, 250, (1,), generator=rng))], start, blocks, True))
    return chunks


def test_buffers_pad_rows_with_negative_slots_and_fixed_width():
    rng = torch.Generator().manual_seed(0)
    chunks = decode_chunks(rng, 3, 64)
    step = prepare_inputs(chunks, BLOCK, "cpu", 64)
    buf = DecodeBuffers(max_batch=8, width=6, device="cpu")
    buf.block_tables.fill_(99)  # poison: stale rows must be overwritten
    buf.seq_lens.fill_(99)
    buf.load(step, 4)
    meta = buf.meta(4)
    assert meta.block_tables.shape == (4, 6)
    assert meta.slot_mapping.tolist()[:3] == step.meta.slot_mapping.tolist()
    assert meta.slot_mapping[3].item() == -1
    assert meta.seq_lens.tolist() == step.meta.seq_lens.tolist() + [1]
    assert buf.input_ids[:3].tolist() == [c.token_ids[0] for c in chunks]
    assert buf.positions[:3].tolist() == [c.start_pos for c in chunks]
    for i, c in enumerate(chunks):
        assert meta.block_tables[i].tolist() == c.block_ids + [0] * (6 - len(c.block_ids))
    assert meta.block_tables[3].tolist() == [0] * 6
    assert meta.cu_seqlens_q.tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="step"):
        buf.load(step, 2)
    with pytest.raises(ValueError, match="step"):
        DecodeBuffers(8, 2, "cpu").load(step, 4)


@pytest.mark.parametrize("deterministic", [False, True])
def test_padded_decode_matches_unpadded_and_never_writes_real_blocks(tiny_checkpoint, deterministic):
    # Deterministic mode makes the real rows' K/V bits independent of the padding; the default
    # kernels may round them differently at batch 8 than at batch 5, so compare only the slots
    # the real rows own there.
    folder = tiny_checkpoint("qwen3")
    runner = ModelRunner(load_model_config(folder), EngineConfig(model=str(folder), dtype="float32", block_size=BLOCK, device="cpu",
                                                                 deterministic=deterministic))
    assert runner.allocate_kv_cache(64) == 64
    assert runner.capture_cuda_graphs(64) == [] and runner.graphs is None  # CPU: always eager
    rng = torch.Generator().manual_seed(1)
    for k_cache, v_cache in runner.kv_caches:  # fresh non-zero cache contents
        k_cache.normal_(generator=rng)
        v_cache.normal_(generator=rng)
    chunks = decode_chunks(rng, 5, 64)
    step = prepare_inputs(chunks, BLOCK, "cpu", 64)
    before = [(k.clone(), v.clone()) for k, v in runner.kv_caches]
    expected = runner.execute_model(chunks).logits
    after_eager = [(k.clone(), v.clone()) for k, v in runner.kv_caches]
    for (k, v), (k0, v0) in zip(runner.kv_caches, before):
        k.copy_(k0)
        v.copy_(v0)

    buf = DecodeBuffers(max_batch=8, width=16, device="cpu")
    buf.load(step, 8)
    with torch.inference_mode():
        padded = runner._logits_step(buf.input_ids[:8], buf.positions[:8], buf.meta(8))
    if deterministic:
        assert torch.equal(padded[:5], expected)
    torch.testing.assert_close(padded[:5], expected, rtol=1e-5, atol=1e-5)
    written = step.meta.slot_mapping
    for (k, v), (ke, ve), (k0, v0) in zip(runner.kv_caches, after_eager, before):  # padded rows wrote nothing
        for got, eager, orig in ((k, ke, k0), (v, ve, v0)):
            flat, flat_eager, flat_orig = got.flatten(0, 1), eager.flatten(0, 1), orig.flatten(0, 1)
            untouched = torch.ones(flat.shape[0], dtype=torch.bool)
            untouched[written] = False
            assert torch.equal(flat[untouched], flat_orig[untouched])
            if deterministic:
                assert torch.equal(flat, flat_eager)
            else:
                torch.testing.assert_close(flat[written], flat_eager[written], rtol=1e-5, atol=1e-5)


def test_graph_step_returns_the_drafter_features_of_the_eager_step(tiny_checkpoint):
    """With `aux_layers` set (a drafter asked for target features), the captured step function
    returns (logits, aux hidden states) equal to what the eager step returns for the real rows."""
    folder = tiny_checkpoint("qwen3")
    runner = ModelRunner(load_model_config(folder), EngineConfig(model=str(folder), dtype="float32", block_size=BLOCK, device="cpu",
                                                                 deterministic=True))
    runner.allocate_kv_cache(64)
    runner.aux_layers = (-1, 0, 1)
    rng = torch.Generator().manual_seed(2)
    for k_cache, v_cache in runner.kv_caches:
        k_cache.normal_(generator=rng)
        v_cache.normal_(generator=rng)
    chunks = decode_chunks(rng, 3, 64)
    step = prepare_inputs(chunks, BLOCK, "cpu", 64)
    before = [(k.clone(), v.clone()) for k, v in runner.kv_caches]
    eager = runner.execute_model(chunks)
    for (k, v), (k0, v0) in zip(runner.kv_caches, before):
        k.copy_(k0)
        v.copy_(v0)
    buf = DecodeBuffers(max_batch=4, width=16, device="cpu")
    buf.load(step, 4)
    with torch.inference_mode():
        logits, aux = runner._logits_step(buf.input_ids[:4], buf.positions[:4], buf.meta(4))
    assert eager.aux_hidden is not None and aux.shape == (4, eager.aux_hidden.shape[1])
    assert torch.equal(logits[:3], eager.logits) and torch.equal(aux[:3], eager.aux_hidden)
    assert aux.shape[1] == 3 * runner.model_config.hidden_size


class StubGraphs:
    """Stands in for `DecodeGraphs` on the CPU: `run` computes the step function eagerly and
    counts its calls (`replays`)."""

    def __init__(self, step_fn) -> None:
        self.step_fn, self.replays = step_fn, 0

    def fits(self, batch: int, width: int) -> bool:
        return True

    def run(self, step):
        self.replays += 1
        return self.step_fn(step.input_ids, step.positions, step.meta)


def test_declined_features_replay_the_feature_free_graphs(tiny_checkpoint):
    """`execute_model(features=False)` (a proposer declined the step's features): a decode step
    goes to `plain_graphs` (its step function is the model without the feature layers) and returns
    no features, with logits bit-identical to the feature graphs' and the eager step's; without
    `plain_graphs` the feature graphs run and their features are dropped; eager steps skip them."""
    folder = tiny_checkpoint("qwen3")
    runner = ModelRunner(load_model_config(folder), EngineConfig(model=str(folder), dtype="float32", block_size=BLOCK,
                                                                 device="cpu", deterministic=True))
    runner.allocate_kv_cache(64)
    runner.aux_layers = runner._graph_aux_layers = (0, 1)
    rng = torch.Generator().manual_seed(3)
    for k_cache, v_cache in runner.kv_caches:
        k_cache.normal_(generator=rng)
        v_cache.normal_(generator=rng)
    chunks = decode_chunks(rng, 3, 64)
    eager = runner.execute_model(chunks)                        # no graphs yet: eager, with features
    declined_eager = runner.execute_model(chunks, features=False)
    assert eager.aux_hidden is not None and declined_eager.aux_hidden is None
    assert torch.equal(declined_eager.logits, eager.logits)
    runner.graphs, runner.plain_graphs = StubGraphs(runner._logits_step), StubGraphs(runner._plain_logits_step)
    with_features = runner.execute_model(chunks)
    assert (runner.graphs.replays, runner.plain_graphs.replays) == (1, 0)
    assert torch.equal(with_features.aux_hidden, eager.aux_hidden)
    declined = runner.execute_model(chunks, features=False)
    assert (runner.graphs.replays, runner.plain_graphs.replays) == (1, 1) and declined.aux_hidden is None
    assert torch.equal(declined.logits, eager.logits) and torch.equal(with_features.logits, eager.logits)
    runner.plain_graphs = None
    dropped = runner.execute_model(chunks, features=False)
    assert runner.graphs.replays == 2 and dropped.aux_hidden is None and torch.equal(dropped.logits, eager.logits)
