# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Asynchronous scheduling gives exactly the outputs of the synchronous loop (deterministic
kernels, so a request's bits cannot depend on the one extra step a stopped neighbour still takes
in the overlapped loop): tokens, logprobs, prompt logprobs, finish reasons and stop reasons, with stop tokens that end requests one step before the engine knows,
max_tokens, min_tokens, seeded sampling, n > 1, chunked prefill, preemption, and requests that
force synchronous steps (logprobs, penalties) in the middle of overlapped ones; aborts drop the
in-flight token.
"""

from __future__ import annotations

import random

import pytest

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.engine.async_core import AsyncEngineCore

BLOCK = 4
MAX_LEN = 128


def workload(vocab: int, seed: int, with_sync_requests: bool):
    rng = random.Random(seed)
    prompts, params = [], []
    for i in range(12):
        prompts.append({"prompt_token_ids": [rng.randrange(vocab - 3) for _ in range(rng.randint(1, 50))]})
        common = dict(max_tokens=rng.randint(1, 30), seed=rng.randrange(1 << 30), min_tokens=rng.choice([0, 0, 3]))
        kind = i % 4
        if kind == 0:
            p = SamplingParams(temperature=0, **common)
        elif kind == 1:  # frequent stop tokens: requests end on a token the engine sees one step late
            p = SamplingParams(temperature=1.0, stop_token_ids=rng.sample(range(vocab - 3), 20), **common)
        elif kind == 2:
            p = SamplingParams(temperature=0.8, top_k=20, n=2, **common)
        else:
            p = SamplingParams(temperature=0.7, top_p=0.9, **common)
        if with_sync_requests and i in (3, 7):  # penalties + logprobs: sampled by the full sampler
            p = SamplingParams(temperature=0.9, logprobs=2, repetition_penalty=1.3, **common)
        if with_sync_requests and i == 9:  # a grammar: masks computed while the next forward runs
            p = SamplingParams(temperature=1.0, seed=common["seed"], max_tokens=40,
                               structured_outputs={"regex": "(ab|cd)+x"})
        if with_sync_requests and i == 5:  # prompt logprobs: a synchronous step; short, so overlap resumes
            common["max_tokens"] = 3
            p = SamplingParams(temperature=0.5, prompt_logprobs=1, **common)
        params.append(p)
    return prompts, params


def run(llm: LLM, prompts, params):
    outs = llm.generate(prompts, params)
    assert all(o.error is None for o in outs)
    return [[(c.token_ids, c.finish_reason, c.stop_reason,
              [sorted((t, lp.logprob) for t, lp in step.items()) for step in (c.logprobs or [])]) for c in o.outputs]
            + [[sorted((t, lp.logprob) for t, lp in step.items()) if step else None
                for step in (o.prompt_logprobs or [])]] for o in outs]


@pytest.mark.parametrize("family", ["qwen3", "llama"])
@pytest.mark.parametrize("with_sync_requests", [False, True])
def test_async_scheduling_matches_synchronous(tiny_checkpoint, family: str, with_sync_requests: bool) -> None:
    folder = tiny_checkpoint(family)
    base = dict(max_model_len=MAX_LEN, block_size=BLOCK, deterministic=True)
    sync = LLM(str(folder), async_scheduling=False, kv_cache_memory=64 << 20, **base)
    prompts, params = workload(sync.engine.vocab_size, seed=len(family), with_sync_requests=with_sync_requests)
    expected = run(sync, prompts, params)
    assert any(c[1] == "stop" for o in expected for c in o[:-1]), "the workload never stopped on a token"

    per_block = sync.engine.runner.kv_bytes_per_block()
    configs = {
        "roomy": dict(kv_cache_memory=64 << 20),
        "chunked": dict(kv_cache_memory=64 << 20, max_num_batched_tokens=16),
        # a queue: slots freed by length limits are refilled while the last tokens are in flight
        "queued": dict(kv_cache_memory=64 << 20, max_num_seqs=3),
        "preempting": dict(kv_cache_memory=34 * per_block, max_num_batched_tokens=32),
    }
    for name, extra in configs.items():
        llm = LLM(str(folder), async_scheduling=True, **base, **extra)
        assert isinstance(llm.engine, AsyncEngineCore)
        assert run(llm, prompts, params) == expected, name
        assert llm.engine.num_overlapped_steps > 0, name
        if name == "preempting":
            assert llm.engine.num_preemptions > 0


def test_abort_drops_the_in_flight_token(tiny_checkpoint) -> None:
    folder = tiny_checkpoint("qwen3")
    llm = LLM(str(folder), max_model_len=MAX_LEN, block_size=BLOCK, kv_cache_memory=64 << 20)
    core = llm.engine
    params = SamplingParams(temperature=0, max_tokens=20, ignore_eos=True)
    core.add_request("a", [5, 6, 7], params)
    core.add_request("b", [8, 9], params)
    for _ in range(4):
        core.step()
    assert core.abort("a")
    seen = {}
    while core.has_unfinished():
        for out in core.step():
            seen.setdefault(out.request_id, []).extend(out.new_token_ids)
            if out.request_id == "b" and out.finish_reason is not None:
                assert out.finish_reason == "length"
    assert "a" not in seen  # nothing reported for the aborted request after the abort
    assert core.scheduler.kv.num_free_blocks == core.scheduler.kv.pool.num_blocks
