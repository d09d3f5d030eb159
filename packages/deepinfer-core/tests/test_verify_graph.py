# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""CPU checks of the padded layout the verification CUDA graphs replay (the capture needs CUDA):
the step function run on the padded buffers gives, for the real rows, what the eager step gives,
and the padding writes nothing to the KV cache."""

from __future__ import annotations

import pytest
import torch

from deepinfer_core.config import EngineConfig
from deepinfer_core.executor.batch import ScheduledChunk, prepare_inputs
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.executor.verify_graph import VerifyBuffers, verify_chunks
from deepinfer_core.loader import load_model_config

BLOCK, Q = 4, 4   # k = 3 drafts


def verify_step(rng: torch.Generator, lens: list[int], num_blocks: int) -> list[ScheduledChunk]:
    """Requests with a cached prefix scoring their last token plus len - 1 drafts."""
    chunks, perm = [], torch.randperm(num_blocks, generator=rng).tolist()
    for n in lens:
        start = int(torch.randint(1, 6 * BLOCK, (1,), generator=rng))
        need = -(-(start + n) // BLOCK)
        blocks, perm = perm[:need], perm[need:]
        tokens = torch.randint(3, 250, (n,), generator=rng).tolist()
        chunks.append(ScheduledChunk(tokens, start, blocks, True, num_logits=n))
    return chunks


@pytest.mark.parametrize("deterministic", [True, False])
def test_padded_verification_matches_the_eager_step(tiny_checkpoint, deterministic):
    folder = tiny_checkpoint("qwen3")
    runner = ModelRunner(load_model_config(folder), EngineConfig(model=str(folder), dtype="float32", block_size=BLOCK,
                                                                 device="cpu", deterministic=deterministic))
    runner.allocate_kv_cache(64)
    runner.aux_layers = (0, 1)
    rng = torch.Generator().manual_seed(4)
    for k_cache, v_cache in runner.kv_caches:   # fresh non-zero cache contents
        k_cache.normal_(generator=rng)
        v_cache.normal_(generator=rng)
    chunks = verify_step(rng, [4, 1, 3, 2], 64)
    assert verify_chunks(chunks, Q) and not verify_chunks(chunks, 3)
    step = prepare_inputs(chunks, BLOCK, "cpu", 64)
    before = [(k.clone(), v.clone()) for k, v in runner.kv_caches]
    eager = runner.execute_model(chunks)
    after_eager = [(k.clone(), v.clone()) for k, v in runner.kv_caches]
    for (k, v), (k0, v0) in zip(runner.kv_caches, before):
        k.copy_(k0)
        v.copy_(v0)

    buf = VerifyBuffers(max_batch=8, query_len=Q, width=16, block_size=BLOCK, device="cpu")
    buf.input_ids.fill_(7)                        # poison: stale rows must be overwritten
    buf.seq_lens.fill_(99)
    rows = buf.load(step, 6)                      # 4 real requests padded to a captured size of 6
    with torch.inference_mode():
        logits, aux = runner._logits_step(buf.input_ids[:6 * Q], buf.positions[:6 * Q], buf.meta(6))
    logits, aux = logits.index_select(0, rows), aux.index_select(0, rows)
    assert logits.shape == eager.logits.shape and aux.shape == eager.aux_hidden.shape
    if deterministic:
        assert torch.equal(logits, eager.logits) and torch.equal(aux, eager.aux_hidden)
    # Default kernels: the GEMMs see 24 rows instead of 10, so fp32 sums may round differently.
    torch.testing.assert_close(logits, eager.logits, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(aux, eager.aux_hidden, rtol=1e-4, atol=1e-4)
    for (k, v), (ke, ve) in zip(runner.kv_caches, after_eager):   # padding wrote nothing anywhere
        torch.testing.assert_close(k, ke, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(v, ve, rtol=1e-4, atol=1e-4)
        if deterministic:
            assert torch.equal(k, ke) and torch.equal(v, ve)


def test_buffers_refuse_steps_that_do_not_fit(tiny_checkpoint):
    rng = torch.Generator().manual_seed(5)
    step = prepare_inputs(verify_step(rng, [2, 2, 2], 64), BLOCK, "cpu", 64)
    buf = VerifyBuffers(max_batch=4, query_len=Q, width=16, block_size=BLOCK, device="cpu")
    with pytest.raises(ValueError, match="^step:"):
        buf.load(step, 2)                        # 3 requests, size 2
    long = prepare_inputs(verify_step(rng, [5], 64), BLOCK, "cpu", 64)
    with pytest.raises(ValueError, match="^step:"):
        buf.load(long, 4)                        # 5 tokens > Q
