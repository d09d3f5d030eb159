# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""CPU checks of the padded layout the mixed-step CUDA graphs replay (the capture needs CUDA):
`MixedGraphs(capture=False)` runs the same padded forward eagerly; through `execute_model` (whose
LM head runs after it) it must give the eager step's logits, prompt logits and features, write
the same KV cache, and leave the steps it does not take to the eager path."""

from __future__ import annotations

import random

import pytest
import torch

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.config import EngineConfig
from deepinfer_core.executor.batch import ScheduledChunk, prepare_inputs
from deepinfer_core.executor.mixed_graph import (CaptureFailed, MixedBuffers, MixedGraphs, capture_or_eager,
                                                 mixed_sizes)
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.loader import load_model_config

BLOCK, BLOCKS = 4, 64


def mixed_step(rng: torch.Generator, prefills: list[tuple[int, int]], decodes: int,
               verify: int = 1) -> list[ScheduledChunk]:
    """Prefill chunks `(cached tokens, new tokens)` (the last sampling when it ends the prompt:
    here every other one) beside `decodes` chunks with a cached prefix: one decode token each,
    or with `verify` > 1 a verification of that many tokens (logits for each)."""
    chunks, perm = [], torch.randperm(BLOCKS, generator=rng).tolist()
    work = [(start, n, i % 2 == 0, 1) for i, (start, n) in enumerate(prefills)]
    work += [(int(torch.randint(1, 5 * BLOCK, (1,), generator=rng)), verify, True, verify) for _ in range(decodes)]
    for start, n, sample, logits in work:
        need = -(-(start + n) // BLOCK)
        blocks, perm = perm[:need], perm[need:]
        tokens = torch.randint(3, 250, (n,), generator=rng).tolist()
        chunks.append(ScheduledChunk(tokens, start, blocks, sample, num_logits=logits, request_id=None))
    return chunks


def runner_for(tiny_checkpoint, deterministic: bool) -> ModelRunner:
    folder = tiny_checkpoint("qwen3")
    runner = ModelRunner(load_model_config(folder), EngineConfig(model=str(folder), dtype="float32", block_size=BLOCK,
                                                                 device="cpu", deterministic=deterministic))
    runner.allocate_kv_cache(BLOCKS)
    rng = torch.Generator().manual_seed(11)
    for k_cache, v_cache in runner.kv_caches:   # fresh non-zero cache contents
        k_cache.normal_(generator=rng)
        v_cache.normal_(generator=rng)
    return runner


def poisoned(graphs: MixedGraphs) -> MixedGraphs:
    """Stale buffer contents a step must overwrite or pad over."""
    b = graphs.buffers
    for t in (b.input_ids, b.positions, b.slot_mapping):
        t.fill_(5)
    b.block_tables.fill_(3)
    b.seq_lens.fill_(9)
    b.cu_seqlens_q.fill_(2)
    return graphs


@pytest.mark.parametrize("deterministic", [True, False])
@pytest.mark.parametrize("features, verify", [(True, 1), (False, 1), (True, 3)])
def test_padded_mixed_step_matches_the_eager_step(tiny_checkpoint, deterministic, features, verify):
    runner = runner_for(tiny_checkpoint, deterministic)
    if features:
        runner.aux_layers = runner._graph_aux_layers = (0, 1)   # as `capture_cuda_graphs` leaves them
    # T = 21 (or 29 with 3-token verifications: a drafted round beside a joiner's prefill)
    chunks = mixed_step(torch.Generator().manual_seed(3), [(0, 9), (6, 5), (0, 3)], decodes=4, verify=verify)
    tokens, rows = sum(len(c.token_ids) for c in chunks), sum(c.num_logits for c in chunks if c.sample)
    before = [(k.clone(), v.clone()) for k, v in runner.kv_caches]
    eager = runner.execute_model(chunks)
    after_eager = [(k.clone(), v.clone()) for k, v in runner.kv_caches]
    for (k, v), (k0, v0) in zip(runner.kv_caches, before):
        k.copy_(k0)
        v.copy_(v0)

    runner.mixed_graphs = poisoned(MixedGraphs(runner._mixed_step, [16, 32, 64], max_requests=8, width=16,
                                               block_size=BLOCK, device="cpu", capture=False))
    padded = runner.execute_model(chunks)            # in the 32-token graph, 7 of 8 chunks
    assert runner.mixed_graphs.replays == 1
    assert padded.logits.shape == eager.logits.shape == (rows, runner.model_config.vocab_size)
    assert padded.cu_seqlens == eager.cu_seqlens
    if deterministic:
        assert torch.equal(padded.logits, eager.logits)
    torch.testing.assert_close(padded.logits, eager.logits, rtol=1e-4, atol=1e-4)
    if features:
        assert padded.aux_hidden.shape == eager.aux_hidden.shape == (tokens, 2 * runner.model_config.hidden_size)
        torch.testing.assert_close(padded.aux_hidden, eager.aux_hidden, rtol=1e-4, atol=1e-4)
        if deterministic:
            assert torch.equal(padded.aux_hidden, eager.aux_hidden)
    else:
        assert padded.aux_hidden is None and eager.aux_hidden is None
    for (k, v), (ke, ve) in zip(runner.kv_caches, after_eager):   # the same KV writes, none from padding
        torch.testing.assert_close(k, ke, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(v, ve, rtol=1e-4, atol=1e-4)
        if deterministic:
            assert torch.equal(k, ke) and torch.equal(v, ve)


def test_steps_the_graphs_do_not_take_run_eagerly(tiny_checkpoint):
    runner = runner_for(tiny_checkpoint, deterministic=True)
    graphs = runner.mixed_graphs = MixedGraphs(runner._mixed_step, [16, 32], max_requests=4, width=16,
                                               block_size=BLOCK, device="cpu", capture=False)
    rng = torch.Generator().manual_seed(8)
    decode_only = mixed_step(rng, [], decodes=3)
    too_long = mixed_step(rng, [(0, 40)], decodes=0)               # 40 tokens > 32
    too_many = mixed_step(rng, [(0, 2)], decodes=4)                # 5 chunks > 4
    for chunks in (decode_only, too_long, too_many):
        out = runner.execute_model(chunks)
        assert out.logits.shape[0] == sum(c.num_logits for c in chunks if c.sample)
    assert graphs.replays == 0
    runner.execute_model(mixed_step(rng, [(0, 6)], decodes=3))
    assert graphs.replays == 1


def test_the_lm_head_runs_after_the_replay_on_any_number_of_rows(tiny_checkpoint):
    # The graph ends at the hidden states: a step with more rows of logits than chunks (two
    # 4-token verifications: 9 rows in a 16-token graph) and one with prompt logprobs replay,
    # and give the eager step's logits and prompt logits bit for bit (deterministic kernels).
    runner = runner_for(tiny_checkpoint, deterministic=True)
    rng = torch.Generator().manual_seed(8)
    verify = mixed_step(rng, [(0, 6)], decodes=2, verify=4)          # 1 + 4 + 4 rows of logits
    logprobs = mixed_step(rng, [(0, 6), (0, 5)], decodes=1)
    logprobs[0].prompt_logprobs = True
    for chunks in (verify, logprobs):
        before = [(k.clone(), v.clone()) for k, v in runner.kv_caches]
        runner.mixed_graphs = None
        eager = runner.execute_model(chunks)
        for (k, v), (k0, v0) in zip(runner.kv_caches, before):
            k.copy_(k0)
            v.copy_(v0)
        runner.mixed_graphs = poisoned(MixedGraphs(runner._mixed_step, [16, 32], max_requests=4, width=16,
                                                   block_size=BLOCK, device="cpu", capture=False))
        padded = runner.execute_model(chunks)
        assert runner.mixed_graphs.replays == 1
        assert padded.logits.shape[0] == sum(c.num_logits for c in chunks if c.sample)
        assert torch.equal(padded.logits, eager.logits)
        assert padded.prompt_logits.keys() == eager.prompt_logits.keys()
        for i, logits in eager.prompt_logits.items():
            assert logits.shape[0] == len(chunks[i].token_ids) and torch.equal(padded.prompt_logits[i], logits)
    assert list(eager.prompt_logits) == [0]


def test_buffers_pad_with_a_request_that_owns_the_extra_rows():
    chunks = mixed_step(torch.Generator().manual_seed(2), [(0, 5)], decodes=2)   # T = 7, B = 3
    step = prepare_inputs(chunks, BLOCK, "cpu", BLOCKS)
    buf = MixedBuffers(max_tokens=32, max_requests=4, width=3, block_size=BLOCK, device="cpu")
    assert buf.width == 8                                  # widened: 32 padding keys need 8 blocks
    buf.seq_lens.fill_(9)
    buf.load(step, 16)
    assert buf.cu_seqlens_q.tolist() == step.cu_seqlens + [16, 16]
    assert buf.seq_lens.tolist() == step.meta.seq_lens.tolist() + [9, 0]
    assert buf.slot_mapping[:7].tolist() == step.meta.slot_mapping.tolist()
    assert set(buf.slot_mapping[7:16].tolist()) == {-1}
    assert int(buf.block_tables[3:].abs().sum()) == 0
    with pytest.raises(ValueError, match="^step:"):
        buf.load(step, 4)                                  # 7 tokens in a 4-token graph
    crowded = prepare_inputs(mixed_step(torch.Generator().manual_seed(2), [(0, 2)], decodes=4), BLOCK, "cpu", BLOCKS)
    with pytest.raises(ValueError, match="^step:"):
        buf.load(crowded, 16)                              # 5 chunks, 4 slots


def test_mixed_sizes_stop_at_the_first_bucket_holding_the_budget():
    assert mixed_sizes(2048) == [16, 32, 64, 128, 256, 512, 1024, 2048]
    assert mixed_sizes(100) == [16, 32, 64, 128]
    assert mixed_sizes(8) == [16]
    assert mixed_sizes(8192) == [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
    assert mixed_sizes(9000) == [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]   # larger steps: eager
    with pytest.raises(ValueError, match="max_num_batched_tokens"):
        mixed_sizes(0)


def test_the_engine_flag_is_checked():
    with pytest.raises(ValueError, match="mixed_cuda_graphs"):
        EngineConfig(device="cpu", mixed_cuda_graphs=1)
    assert EngineConfig(device="cpu").mixed_cuda_graphs is True   # on by default (a no-op off CUDA)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="captures CUDA graphs (GPU_TESTS.md)")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_mixed_graphs_give_the_eager_engines_tokens_on_cuda(tiny_checkpoint, dtype):
    # Deterministic kernels on both sides: a 24-token budget chunks the prompts into mixed steps
    # (prefill chunks beside decode tokens) that one engine replays and the other runs eagerly.
    folder = tiny_checkpoint("qwen3")
    common = dict(device="cuda", dtype=dtype, deterministic=True, block_size=BLOCK, max_model_len=256,
                  max_num_seqs=8, max_num_batched_tokens=24, kv_cache_memory=64 << 20)
    graphs, eager = LLM(str(folder), **common), LLM(str(folder), mixed_cuda_graphs=False, **common)   # on by default
    assert graphs.engine.runner.mixed_graphs is not None and eager.engine.runner.mixed_graphs is None
    rng = random.Random(3)
    vocab = graphs.engine.vocab_size
    requests = [{"prompt_token_ids": [rng.randrange(3, vocab - 3) for _ in range(rng.randint(5, 60))]}
                for _ in range(12)]
    params = SamplingParams(temperature=0, max_tokens=20, ignore_eos=True)
    got = [o.outputs[0].token_ids for o in graphs.generate(requests, params)]
    want = [o.outputs[0].token_ids for o in eager.generate(requests, params)]
    assert got == want
    assert graphs.engine.runner.mixed_graphs.replays > 0


@pytest.mark.parametrize("case", ["bucket_full", "no_logits", "placeholders"])
def test_edge_steps_match_the_eager_step(tiny_checkpoint, case):
    # bucket_full: T = 16 = the bucket and B = max_requests (the padding request has no rows);
    # no_logits: no chunk samples (0 rows of logits); placeholders: tokens taken from the previous
    # step's samples on the device (`fill_from`, asynchronous scheduling).
    runner = runner_for(tiny_checkpoint, deterministic=True)
    runner.aux_layers = runner._graph_aux_layers = (0, 1)
    rng, fill_from, slots = torch.Generator().manual_seed(4), None, 4
    if case == "bucket_full":
        chunks, slots = mixed_step(rng, [(0, 9), (3, 4)], decodes=3), 5     # 9 + 4 + 3 tokens, 5 chunks
    elif case == "no_logits":
        chunks = mixed_step(rng, [(0, 9), (6, 5)], decodes=0)
        for chunk in chunks:
            chunk.sample = False
    else:
        chunks, fill_from = mixed_step(rng, [(0, 9)], decodes=3), torch.tensor([17, 33, 41, 55])
        for row, chunk in enumerate(chunks[1:], start=1):
            chunk.fill_row, chunk.token_ids[-1] = row, -1
    before = [(k.clone(), v.clone()) for k, v in runner.kv_caches]
    eager = runner.execute_model(chunks, fill_from=fill_from)
    after = [(k.clone(), v.clone()) for k, v in runner.kv_caches]
    for (k, v), (k0, v0) in zip(runner.kv_caches, before):
        k.copy_(k0)
        v.copy_(v0)
    runner.mixed_graphs = poisoned(MixedGraphs(runner._mixed_step, [16, 32], max_requests=slots, width=16,
                                               block_size=BLOCK, device="cpu", capture=False))
    padded = runner.execute_model(chunks, fill_from=fill_from)
    assert runner.mixed_graphs.replays == 1
    assert torch.equal(padded.logits, eager.logits) and torch.equal(padded.aux_hidden, eager.aux_hidden)
    for (k, v), (ke, ve) in zip(runner.kv_caches, after):
        assert torch.equal(k, ke) and torch.equal(v, ve)


def test_a_failed_capture_leaves_the_steps_eager_with_a_warning(caplog):
    # Mixed graphs are on by default: a kernel that syncs with the host during capture (or the
    # graphs' memory) must not stop the engine from starting; the warning names the first error
    # of the chain (the sync), not only the capture's own. Other errors, such as a bug in the
    # eager warm-up forward, propagate.
    def syncs():
        try:
            try:
                raise RuntimeError("operation not permitted when stream is capturing")
            except RuntimeError:
                raise RuntimeError("operation failed due to a previous error during capture")
        except RuntimeError as exc:
            raise CaptureFailed("the 512-token graph") from exc

    def out_of_memory():
        raise torch.OutOfMemoryError("CUDA out of memory")

    with caplog.at_level("WARNING", logger="deepinfer_core.executor.mixed_graph"):
        assert capture_or_eager(syncs) is None and capture_or_eager(out_of_memory) is None
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and all("mixed_cuda_graphs: capture failed" in m for m in messages)
    assert messages[0].index("not permitted") < messages[0].index("previous error") < messages[0].index("512-token")
    assert "OutOfMemoryError: CUDA out of memory" in messages[1]
    built = object()
    assert capture_or_eager(lambda: built) is built

    def warm_up_bug():
        return torch.zeros(2, 3) @ torch.zeros(2, 3)   # a RuntimeError that is no capture failure

    for bug in (warm_up_bug, lambda: int("x")):
        with pytest.raises((RuntimeError, ValueError)):
            capture_or_eager(bug)
    assert len(caplog.records) == 2
