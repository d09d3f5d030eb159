# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Sampler: seeds, top-k/top-p/min-p support vs brute force, penalties vs per-token loops and HF,
min_tokens bans, logprobs vs a direct computation, batch invariance."""

from __future__ import annotations

import math
import random

import pytest
import torch
from transformers import RepetitionPenaltyLogitsProcessor

from deepinfer_core.engine.request import Request
from deepinfer_core.sampling.penalties import PenaltyState, apply_penalties
from deepinfer_core.sampling.sampler import Sampler
from deepinfer_core.sampling.seeds import derive_seed, to_int64
from deepinfer_core.sampling_params import SamplingParams

V = 24


def make_request(rid: str, params: SamplingParams, seed: int, prompt: list[int] | None = None,
                 output: list[int] | None = None, eos: int | None = None) -> Request:
    req = Request(rid, prompt or [1, 2, 3], params, arrival=0, eos_token_id=eos, seed=seed)
    for t in output or []:
        req.append_output_token(t)
    return req


def fresh_logits(rows: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, V, generator=g) * 2.0


def brute_force_probs(logits: list[float], temperature: float, top_k: int, top_p: float, min_p: float) -> list[float]:
    """Temperature -> top-k -> top-p -> min-p, each renormalised (HF warper order), in plain Python."""
    m = max(logits)
    p = [math.exp((x - m) / temperature) for x in logits]
    p = [x / sum(p) for x in p]
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))
    if 0 < top_k < len(p):
        keep = set(order[:top_k])
        p = [x if i in keep else 0.0 for i, x in enumerate(p)]
        p = [x / sum(p) for x in p]
    if top_p < 1:
        keep, mass = set(), 0.0
        for i in order:
            if mass >= top_p:
                break
            keep.add(i)
            mass += p[i]
        p = [x if i in keep else 0.0 for i, x in enumerate(p)]
        p = [x / sum(p) for x in p]
    if min_p > 0:
        top = max(p)
        p = [x if x >= min_p * top else 0.0 for x in p]
        p = [x / sum(p) for x in p]
    return p


@pytest.mark.parametrize("temperature,top_k,top_p,min_p", [
    (1.0, 0, 1.0, 0.0), (0.7, 5, 1.0, 0.0), (1.3, 0, 0.6, 0.0), (1.0, 0, 1.0, 0.2), (0.9, 8, 0.8, 0.05),
])
def test_samples_follow_brute_force_filtered_distribution(temperature, top_k, top_p, min_p) -> None:
    logits = fresh_logits(1, seed=7)
    params = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p)
    expected = brute_force_probs(logits[0].tolist(), temperature, top_k, top_p, min_p)
    sampler = Sampler()
    draws = 3000
    # One row per seed: each row is an independent draw from the same distribution.
    reqs = [make_request(str(i), params, seed=1000 + i) for i in range(draws)]
    tokens = sampler(logits.repeat(draws, 1), reqs).token_ids
    counts = [0] * V
    for t in tokens:
        counts[t] += 1
    allowed = {i for i, p in enumerate(expected) if p > 0}
    assert set(tokens) <= allowed, "sampled a token the filters remove"
    for i in allowed:  # empirical frequency within 5 standard deviations (fixed seeds: deterministic)
        sd = math.sqrt(expected[i] * (1 - expected[i]) / draws)
        assert abs(counts[i] / draws - expected[i]) <= 5 * sd + 1e-3, (i, counts[i] / draws, expected[i])


def test_seeded_sampling_is_reproducible_and_seed_dependent() -> None:
    logits = fresh_logits(1, seed=3)
    params = SamplingParams(temperature=1.0)

    def run(seed: int) -> list[int]:
        sampler, req, out = Sampler(), make_request("a", params, seed=seed), []
        for _ in range(40):
            t = sampler(logits.clone(), [req]).token_ids[0]
            req.append_output_token(t)
            out.append(t)
        return out

    assert run(11) == run(11)
    assert run(11) != run(12)
    assert len(set(run(11))) > 3, "the draw must change with the step (same logits every step)"


def test_request_samples_do_not_depend_on_the_batch() -> None:
    target = SamplingParams(temperature=0.8, top_p=0.9, top_k=10)
    others = [SamplingParams(temperature=1.5), SamplingParams(temperature=0), SamplingParams(min_p=0.1, seed=None),
              SamplingParams(temperature=1.0, repetition_penalty=1.3, presence_penalty=0.5)]
    steps = 12
    row_logits = [fresh_logits(1, seed=100 + s) for s in range(steps)]

    alone_sampler, alone = Sampler(), make_request("t", target, seed=42)
    batch_sampler = Sampler()
    batched = make_request("t", target, seed=42)
    neighbours = [make_request(f"n{i}", p, seed=i) for i, p in enumerate(others)]
    rng = random.Random(0)
    for s in range(steps):
        t_alone = alone_sampler(row_logits[s].clone(), [alone]).token_ids[0]
        alone.append_output_token(t_alone)
        group = neighbours[: rng.randint(0, len(neighbours))] + [batched]
        rng.shuffle(group)
        logits = torch.cat([row_logits[s] if r is batched else fresh_logits(1, seed=rng.randrange(10**6))
                            for r in group])
        tokens = batch_sampler(logits, group).token_ids
        for r, t in zip(group, tokens):
            r.append_output_token(t)
    assert batched.output_token_ids == alone.output_token_ids


def direct_penalties(logits: list[float], prompt: list[int], output: list[int], rep: float, pres: float,
                     freq: float) -> list[float]:
    """Per-token loops over the definitions (CTRL repetition; OpenAI presence/frequency)."""
    out = list(logits)
    for tok in set(prompt) | set(output):
        out[tok] = out[tok] / rep if out[tok] > 0 else out[tok] * rep
    for tok in set(output):
        out[tok] -= freq * output.count(tok) + pres
    return out


def test_penalties_match_per_token_definitions_and_hf() -> None:
    rng = random.Random(5)
    rows, logits = [], fresh_logits(4, seed=9)
    expected, states = [], []
    for b in range(4):
        prompt = [rng.randrange(V) for _ in range(rng.randint(1, 8))]
        output = [rng.randrange(V) for _ in range(rng.randint(0, 12))]
        rep, pres, freq = rng.uniform(0.5, 2.0), rng.uniform(-2, 2), rng.uniform(-2, 2)
        rows.append((rep, pres, freq))
        expected.append(direct_penalties(logits[b].tolist(), prompt, output, rep, pres, freq))
        state = PenaltyState(prompt, V, torch.device("cpu"))
        state.sync(output[: len(output) // 2])  # incremental updates must add up
        state.sync(output)
        states.append(state)
        # HF's processor applies the same repetition rule over prompt + output ids.
        hf = RepetitionPenaltyLogitsProcessor(rep)(torch.tensor([prompt + output]), logits[b:b + 1].clone())
        ours_rep = apply_penalties(logits[b:b + 1], state.prompt_mask[None], state.output_counts[None],
                                   torch.tensor([rep]), torch.zeros(1), torch.zeros(1))
        torch.testing.assert_close(ours_rep, hf)
    got = apply_penalties(logits, torch.stack([s.prompt_mask for s in states]),
                          torch.stack([s.output_counts for s in states]),
                          *(torch.tensor(col, dtype=torch.float32) for col in zip(*rows)))
    torch.testing.assert_close(got, torch.tensor(expected))


def test_sampler_applies_penalties_before_greedy_choice() -> None:
    rng = random.Random(8)
    sampler = Sampler()
    for step in range(10):
        logits = fresh_logits(3, seed=50 + step)
        reqs, expect = [], []
        for b in range(3):
            params = SamplingParams(temperature=0, repetition_penalty=rng.uniform(1.0, 3.0),
                                    presence_penalty=rng.uniform(0, 2), frequency_penalty=rng.uniform(0, 2))
            prompt = [rng.randrange(V) for _ in range(4)]
            output = [rng.randrange(V) for _ in range(rng.randint(0, 6))]
            reqs.append(make_request(f"r{step}-{b}", params, seed=b, prompt=prompt, output=output))
            pen = direct_penalties(logits[b].tolist(), prompt, output, params.repetition_penalty,
                                   params.presence_penalty, params.frequency_penalty)
            expect.append(max(range(V), key=lambda i: (pen[i], -i)))
        assert sampler(logits.clone(), reqs).token_ids == expect


def test_min_tokens_bans_eos_and_stop_tokens_until_reached() -> None:
    eos, stop = 5, 9
    logits = fresh_logits(1, seed=1)
    logits[0, eos] = 50.0
    logits[0, stop] = 40.0
    params = SamplingParams(temperature=0, min_tokens=2, stop_token_ids=[stop])
    sampler = Sampler()
    assert sampler(logits.clone(), [make_request("a", params, 0, eos=eos)]).token_ids == [
        int(logits[0, :].clone().index_fill_(0, torch.tensor([eos, stop]), -1e9).argmax())]
    assert sampler(logits.clone(), [make_request("b", params, 0, output=[1, 2], eos=eos)]).token_ids == [eos]
    ignore = SamplingParams(temperature=0, min_tokens=2, ignore_eos=True)
    assert sampler(logits.clone(), [make_request("c", ignore, 0, eos=eos)]).token_ids == [eos]


def test_logprobs_are_raw_and_ranked() -> None:
    logits = fresh_logits(2, seed=21)
    params = [SamplingParams(temperature=0.5, logprobs=3, repetition_penalty=2.0, seed=1),
              SamplingParams(temperature=0, logprobs=0)]
    reqs = [make_request("a", params[0], 1, prompt=[0, 1, 2]), make_request("b", params[1], 2)]
    out = Sampler()(logits.clone(), reqs)
    for b in range(2):
        ref = torch.log_softmax(logits[b].double(), dim=-1).tolist()  # raw: no penalty, no temperature
        lp = out.logprobs[b]
        chosen = out.token_ids[b]
        assert lp.token_ids[0] == chosen
        assert lp.logprobs[0] == pytest.approx(ref[chosen], abs=1e-5)
        assert lp.ranks[0] == 1 + sum(x > ref[chosen] for x in ref)
        order = sorted(range(V), key=lambda i: -ref[i])[: params[b].logprobs]
        assert lp.token_ids[1:] == order
        assert lp.logprobs[1:] == pytest.approx([ref[i] for i in order], abs=1e-5)
        assert lp.ranks[1:] == list(range(1, params[b].logprobs + 1))


def test_derived_seeds_are_distinct_int64() -> None:
    seeds = [derive_seed(123, i) for i in range(1000)]
    assert seeds[0] == 123 and len(set(seeds)) == 1000
    assert all(-(2**63) <= s < 2**63 for s in seeds)
    assert to_int64(2**64 + 5) == 5 and to_int64(2**63) == -(2**63)
