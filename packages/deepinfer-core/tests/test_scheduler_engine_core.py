# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""EngineCore's schedule -> execute -> sample -> update loop against a fake paged model.

The fake runner stores token ids in its "KV cache" slots (through the block tables and start
positions the engine sends) and computes each position's logits from the prefix it reads back.
Any mistake in chunk tokens, positions, block tables or recompute after preemption changes the
logits, so outputs are compared with a brute-force loop over the true token sequence.
"""

from __future__ import annotations

import pytest
import torch

from deepinfer_core.config import EngineConfig
from deepinfer_core.engine.engine_core import EngineCore
from deepinfer_core.executor.batch import ModelOutput, ScheduledChunk
from deepinfer_core.sampling_params import SamplingParams

V = 50


def prefix_logits(prefix: list[int]) -> torch.Tensor:
    """Logits of the next token after `prefix` (any fixed pseudo-random function of it)."""
    g = torch.Generator().manual_seed(hash(tuple(prefix)) & 0xFFFFFFFF)
    return torch.randn(V, generator=g) * 3.0


class SlotRunner:
    """A fake model whose KV cache holds token ids at slot `block * block_size + offset`."""

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self.slots: list[int | None] = []

    def kv_bytes_per_block(self) -> int:
        return 1

    def allocate_kv_cache(self, num_blocks: int | None = None) -> int:
        self.slots = [None] * (num_blocks * self.block_size)
        return num_blocks

    def _slot(self, chunk: ScheduledChunk, pos: int) -> int:
        return chunk.block_ids[pos // self.block_size] * self.block_size + pos % self.block_size

    def execute_model(self, chunks: list[ScheduledChunk]) -> ModelOutput:
        for c in chunks:  # store every chunk's KV first (as the real runner does)
            for j, t in enumerate(c.token_ids):
                self.slots[self._slot(c, c.start_pos + j)] = t

        def logits_at(c: ScheduledChunk, pos: int) -> torch.Tensor:
            prefix = [self.slots[self._slot(c, p)] for p in range(pos + 1)]
            assert None not in prefix, "read a slot that was never written"
            return prefix_logits(prefix)

        rows = [logits_at(c, c.start_pos + len(c.token_ids) - 1) for c in chunks if c.sample]
        prompt = {i: torch.stack([logits_at(c, c.start_pos + j) for j in range(len(c.token_ids))])
                  for i, c in enumerate(chunks) if c.prompt_logprobs}
        return ModelOutput(logits=torch.stack(rows) if rows else torch.empty(0, V), prompt_logits=prompt)


def make_engine(num_blocks: int, block_size: int = 4, budget: int = 64, max_seqs: int = 8,
                max_model_len: int = 48, chunked: bool = True, seed: int = 0) -> EngineCore:
    config = EngineConfig(block_size=block_size, kv_cache_memory=num_blocks, max_num_seqs=max_seqs,
                          max_num_batched_tokens=budget, enable_chunked_prefill=chunked, seed=seed)
    return EngineCore(SlotRunner(block_size), config, max_model_len, V, eos_token_id=None)


def greedy_reference(prompt: list[int], max_tokens: int) -> list[int]:
    seq = list(prompt)
    for _ in range(max_tokens):
        seq.append(int(prefix_logits(seq).argmax()))
    return seq[len(prompt):]


def run(engine: EngineCore, requests: dict[str, tuple[list[int], SamplingParams]]) -> dict[str, list[int]]:
    for rid, (prompt, params) in requests.items():
        engine.add_request(rid, prompt, params)
    out: dict[str, list[int]] = {rid: [] for rid in requests}
    finished = set()
    for _ in range(10000):
        if not engine.has_unfinished():
            break
        for o in engine.step():
            assert o.request_id not in finished
            out[o.request_id] += o.new_token_ids
            if o.finish_reason is not None:
                finished.add(o.request_id)
    assert finished == set(requests)
    return out


PROMPTS = {str(i): [(7 * i + 3 * j) % V for j in range(n)] for i, n in enumerate([5, 17, 9, 30, 2, 12])}


@pytest.mark.parametrize("num_blocks,budget,chunked,expect_preemption", [
    (200, 256, True, False),  # roomy: everything batched
    (200, 7, True, False),  # chunked prefill forced by a small budget
    (200, 48, False, False),  # whole-prompt admission
    (14, 16, True, True),  # tiny KV pool: preemption by recompute
])
def test_greedy_outputs_match_brute_force(num_blocks, budget, chunked, expect_preemption) -> None:
    engine = make_engine(num_blocks, budget=budget, chunked=chunked)
    params = SamplingParams(temperature=0, max_tokens=14, ignore_eos=True)
    out = run(engine, {rid: (p, params) for rid, p in PROMPTS.items()})
    for rid, prompt in PROMPTS.items():
        assert out[rid] == greedy_reference(prompt, 14), rid
    assert (engine.num_preemptions > 0) == expect_preemption
    assert engine.scheduler.kv.num_free_blocks == num_blocks


def test_seeded_sampling_is_independent_of_batching_and_preemption() -> None:
    params = {rid: SamplingParams(temperature=1.0, top_p=0.95, max_tokens=12, seed=int(rid) * 31, ignore_eos=True)
              for rid in PROMPTS}
    alone = {}
    for rid, prompt in PROMPTS.items():
        alone.update(run(make_engine(200), {rid: (prompt, params[rid])}))
    crowded = make_engine(14, budget=16)
    together = run(crowded, {rid: (p, params[rid]) for rid, p in PROMPTS.items()})
    assert crowded.num_preemptions > 0
    assert together == alone


def test_engine_seed_draws_request_seeds_reproducibly() -> None:
    params = SamplingParams(temperature=1.0, max_tokens=10, ignore_eos=True)
    reqs = {rid: (p, params) for rid, p in PROMPTS.items()}
    assert run(make_engine(200, seed=3), reqs) == run(make_engine(200, seed=3), reqs)
    assert run(make_engine(200, seed=3), reqs) != run(make_engine(200, seed=4), reqs)


def test_prompt_logprobs_cover_each_prompt_position_once() -> None:
    prompt = PROMPTS["3"]  # 30 tokens: several chunks under a budget of 7
    engine = make_engine(14, budget=7)
    params = SamplingParams(temperature=0, max_tokens=6, prompt_logprobs=2, logprobs=1, ignore_eos=True)
    engine.add_request("p", prompt, params)
    engine.add_request("q", PROMPTS["1"], SamplingParams(temperature=0, max_tokens=20, ignore_eos=True))
    got, sampled = [], []
    while engine.has_unfinished():
        for o in engine.step():
            if o.request_id == "p":
                got += o.prompt_logprobs or []
                sampled += o.new_logprobs or []
    assert len(got) == len(prompt) - 1
    for pos, lp in enumerate(got, start=1):
        ref = torch.log_softmax(prefix_logits(prompt[:pos]).double(), dim=-1)
        assert lp.token_ids[0] == prompt[pos]
        assert lp.logprobs[0] == pytest.approx(float(ref[prompt[pos]]), abs=1e-5)
        assert lp.token_ids[1:] == ref.topk(2).indices.tolist()
    assert len(sampled) == 6 and all(s.ranks[0] == 1 for s in sampled)  # greedy picks rank 1


def test_abort_releases_blocks_and_stops_outputs() -> None:
    engine = make_engine(200)
    params = SamplingParams(temperature=0, max_tokens=30, ignore_eos=True)
    engine.add_request("a", PROMPTS["1"], params)
    engine.add_request("b", PROMPTS["2"], params)
    engine.step()
    assert engine.abort("a") and not engine.abort("a")
    seen = set()
    while engine.has_unfinished():
        seen |= {o.request_id for o in engine.step()}
    assert seen == {"b"} and engine.scheduler.kv.num_free_blocks == 200


def test_kv_budget_must_hold_one_sequence_and_requests_are_validated() -> None:
    with pytest.raises(ValueError, match="kv_cache_memory"):
        make_engine(num_blocks=11, block_size=4, max_model_len=48)  # 44 tokens < 48
    engine = make_engine(200)
    with pytest.raises(ValueError, match="prompt is 49 tokens, longer than max_model_len"):
        engine.add_request("x", [1] * 49, SamplingParams())
    with pytest.raises(ValueError, match="prompt token ids"):
        engine.add_request("x", [1, V], SamplingParams())
    with pytest.raises(ValueError, match="prompt must not be empty"):
        engine.add_request("x", [], SamplingParams())
    with pytest.raises(ValueError, match="top_k must be <= the vocabulary size"):
        engine.add_request("x", [1], SamplingParams(top_k=V + 1))
    with pytest.raises(ValueError, match="logprobs must be <= 20"):
        engine.add_request("x", [1], SamplingParams(logprobs=21))
    assert not engine.has_unfinished()
