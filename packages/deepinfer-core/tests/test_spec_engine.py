# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Speculative decoding in the engine: greedy output with drafts equals greedy output without
them (tokens and logprob bits, in deterministic mode), batched and under preemption, with
proposers that are right, partly right and wrong; rejected drafts leave the KV cache exactly as
if they had never been drafted; drafts stop at max_tokens and EOS.
"""

from __future__ import annotations

import random

import torch

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.interfaces import Draft, DraftRequest, Proposer

BLOCK = 4
MAX_LEN = 128
STEPS = 20


class OracleProposer:
    """Drafts the known greedy continuation, corrupted at a random position half of the time."""

    def __init__(self, continuations: dict[tuple[int, ...], list[int]], vocab: int, seed: int,
                 corrupt: float = 0.5) -> None:
        self.continuations = continuations
        self.vocab = vocab
        self.rng = random.Random(seed)
        self.corrupt = corrupt
        self.commits: list[tuple[str, int]] = []
        self.removed: set[str] = set()

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        drafts = []
        for r in requests:
            prompt = next(p for p in self.continuations if tuple(r.token_ids[:len(p)]) == p)
            done = len(r.token_ids) - len(prompt)
            tokens = list(self.continuations[prompt][done:done + self.rng.randint(1, r.max_tokens)])
            if tokens and self.rng.random() < self.corrupt:
                j = self.rng.randrange(len(tokens))
                tokens[j] = (tokens[j] + 1 + self.rng.randrange(self.vocab - 1)) % self.vocab
            drafts.append(Draft(tokens))
        return drafts

    def commit(self, request_id: str, num_tokens: int) -> None:
        self.commits.append((request_id, num_tokens))

    def remove(self, request_id: str) -> None:
        self.removed.add(request_id)


def prompts(vocab: int, seed: int, count: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(vocab - 3) for _ in range(rng.randint(2, 40))] for _ in range(count)]


def greedy(llm: LLM, batch: list[list[int]], logprobs: int | None = 2):
    params = SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True, logprobs=logprobs)
    outs = llm.generate([{"prompt_token_ids": p} for p in batch], params)
    assert all(o.error is None for o in outs)
    return [(o.outputs[0].token_ids, [sorted((t, lp.logprob) for t, lp in step.items())
                                      for step in (o.outputs[0].logprobs or [])]) for o in outs]


def build(folder, spec=None, **kw) -> LLM:
    common = dict(max_model_len=MAX_LEN, block_size=BLOCK, kv_cache_memory=64 << 20, deterministic=True)
    common.update(kw)
    return LLM(str(folder), speculative_config=spec, **common)


def test_greedy_with_drafts_equals_greedy_without(tiny_checkpoint) -> None:
    folder = tiny_checkpoint("qwen3")
    plain = build(folder)
    vocab = plain.engine.vocab_size
    batch = prompts(vocab, seed=1, count=6)
    expected = greedy(plain, batch)
    continuations = {tuple(p): e[0] for p, e in zip(batch, expected)}
    for corrupt in (0.0, 0.5, 1.0):
        proposer = OracleProposer(continuations, vocab, seed=int(corrupt * 10), corrupt=corrupt)
        assert isinstance(proposer, Proposer)
        llm = build(folder, {"proposer": proposer, "num_speculative_tokens": 5})
        assert greedy(llm, batch) == expected, f"batched, corrupt={corrupt}"
        assert [greedy(llm, [p])[0] for p in batch] == expected, f"alone, corrupt={corrupt}"
        stats = llm.engine.speculative.stats
        assert stats.rounds > 0 and stats.verified > 0
        before = (stats.verified, stats.accepted, stats.rounds)
        outs = llm.generate([{"prompt_token_ids": p} for p in batch],
                            SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True))
        m = [o.metrics for o in outs]  # per-request counters add up to the engine's counters
        assert sum(x.spec_verified for x in m) == stats.verified - before[0]
        assert sum(x.spec_accepted for x in m) == stats.accepted - before[1]
        assert sum(x.spec_rounds for x in m) == stats.rounds - before[2] > 0
        assert all(x.spec_verified <= x.spec_proposed and x.spec_accepted <= x.spec_verified for x in m)
        if corrupt == 0.0:
            assert all(x.mean_accepted_length is None or x.mean_accepted_length > 1.0 for x in m)
        if corrupt == 0.0:
            assert stats.accepted == stats.verified  # right drafts are all accepted
            assert stats.mean_accepted_length > 2.0
        if corrupt == 1.0:
            assert stats.accepted < stats.verified
        assert proposer.commits and proposer.removed


def test_greedy_with_drafts_under_preemption(tiny_checkpoint) -> None:
    folder = tiny_checkpoint("llama")
    plain = build(folder)
    vocab = plain.engine.vocab_size
    batch = prompts(vocab, seed=2, count=8)
    expected = greedy(plain, batch)
    proposer = OracleProposer({tuple(p): e[0] for p, e in zip(batch, expected)}, vocab, seed=3)
    per_block = plain.engine.runner.kv_bytes_per_block()
    tight = build(folder, {"proposer": proposer, "num_speculative_tokens": 4},
                  kv_cache_memory=33 * per_block, max_num_batched_tokens=64)
    assert greedy(tight, batch) == expected
    assert tight.engine.num_preemptions > 0


def test_rejected_drafts_leave_the_kv_cache_as_if_never_drafted(tiny_checkpoint) -> None:
    folder = tiny_checkpoint("qwen3")
    plain = build(folder)
    vocab = plain.engine.vocab_size
    prompt = prompts(vocab, seed=4, count=1)[0]
    expected = greedy(plain, [prompt], logprobs=None)[0][0]
    proposer = OracleProposer({tuple(prompt): expected}, vocab, seed=5, corrupt=0.7)
    spec = build(folder, {"proposer": proposer, "num_speculative_tokens": 4})
    core = spec.engine
    core.add_request("r", prompt, SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True))
    request = core.scheduler.requests["r"]
    checked = 0
    while core.has_unfinished():
        core.step()
        if request.is_finished:
            break
        n = request.num_computed_tokens
        assert len(request.block_ids) == -(-(n + 1) // BLOCK)  # trimmed past the pending token
        fresh = build(folder)
        fresh.engine.add_request("f", request.all_token_ids[:n], SamplingParams(max_tokens=2, ignore_eos=True))
        fresh.engine.step()  # the prefill of the committed tokens
        other = fresh.engine.scheduler.requests["f"]
        for (k1, v1), (k2, v2) in zip(core.runner.kv_caches, fresh.engine.runner.kv_caches):
            for a, b in ((k1, k2), (v1, v2)):
                got = a[torch.tensor(request.block_ids)].flatten(0, 1)[:n]
                want = b[torch.tensor(other.block_ids)].flatten(0, 1)[:n]
                assert torch.equal(got, want), f"KV differs after {n} committed tokens"
        checked += 1
    assert checked >= 3 and core.speculative.stats.accepted < core.speculative.stats.verified


def test_drafts_respect_max_tokens_and_eos(tiny_checkpoint) -> None:
    folder = tiny_checkpoint("qwen3")
    plain = build(folder)
    vocab = plain.engine.vocab_size
    batch = prompts(vocab, seed=6, count=3)
    expected = greedy(plain, batch, logprobs=None)
    eos = plain.engine.eos_token_id
    # The oracle continues past the true end with EOS-free tokens; outputs must still stop at max_tokens.
    cont = {tuple(p): e[0] + [1] * 20 for p, e in zip(batch, expected)}
    llm = build(folder, {"proposer": OracleProposer(cont, vocab, seed=7, corrupt=0.0), "num_speculative_tokens": 7})
    got = llm.generate([{"prompt_token_ids": p} for p in batch],
                       SamplingParams(temperature=0, max_tokens=9, ignore_eos=True))
    assert [o.outputs[0].token_ids for o in got] == [e[0][:9] for e in expected]
    # Drafts that insert EOS where the target would not put it are rejected like any wrong draft;
    # the output equals plain greedy decoding with EOS handling on.
    params = SamplingParams(temperature=0, max_tokens=STEPS)
    want = [o.outputs[0].token_ids for o in plain.generate([{"prompt_token_ids": p} for p in batch], params)]
    eos_cont = {tuple(p): e[0][:3] + [eos] + e[0][3:] for p, e in zip(batch, expected)}
    llm = build(folder, {"proposer": OracleProposer(eos_cont, vocab, seed=8, corrupt=0.0),
                         "num_speculative_tokens": 7})
    outs = llm.generate([{"prompt_token_ids": p} for p in batch], params)
    assert [o.outputs[0].token_ids for o in outs] == want


def test_stop_string_inside_a_multi_token_step_ends_the_output_there(tiny_checkpoint) -> None:
    folder = tiny_checkpoint("llama")
    plain = build(folder)
    vocab = plain.engine.vocab_size
    batch = prompts(vocab, seed=9, count=4)
    expected = greedy(plain, batch, logprobs=None)
    proposer = OracleProposer({tuple(p): e[0] for p, e in zip(batch, expected)}, vocab, seed=10, corrupt=0.0)
    spec = build(folder, {"proposer": proposer, "num_speculative_tokens": 6})
    stopped = 0
    for p in batch:
        base = SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True)
        full = plain.generate([{"prompt_token_ids": p}], base)[0].outputs[0].text
        # A stop string first seen in the middle of the output text.
        k = next((k for k in range(len(full) // 3, len(full) - 2)
                  if full[k:k + 2].isprintable() and full[k:k + 2].strip() and full.find(full[k:k + 2]) == k), None)
        if k is None:
            continue
        params = SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True, stop=[full[k:k + 2]])
        want = plain.generate([{"prompt_token_ids": p}], params)[0].outputs[0]
        got = spec.generate([{"prompt_token_ids": p}], params)[0].outputs[0]
        assert (got.token_ids, got.text, got.finish_reason) == (want.token_ids, want.text, want.finish_reason)
        stopped += want.finish_reason == "stop"
    assert stopped >= 2
    assert spec.engine.speculative.stats.accepted > 0
