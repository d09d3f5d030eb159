# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference sampler: filters against HF's logits warpers, greedy, seeding, batch invariance,
the empirical distribution, and the counter-based hash against Python integer arithmetic."""

from __future__ import annotations

import random

import pytest
import torch
from transformers.generation.logits_process import (MinPLogitsWarper, TemperatureLogitsWarper,
                                                    TopKLogitsWarper, TopPLogitsWarper)

from deepinfer_kernels import ops
from deepinfer_kernels.backends.reference import sampling as ref


def _params(batch, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=0, step=0):
    full = lambda v, dt: torch.full((batch,), v, dtype=dt)   # noqa: E731
    return (full(temperature, torch.float32), full(top_k, torch.int64), full(top_p, torch.float32),
            full(min_p, torch.float32), full(seed, torch.int64), full(step, torch.int64))


def _hf_allowed(logits_row, t, k, p, m):
    scores = logits_row[None].clone()
    warpers = [TemperatureLogitsWarper(t)]
    if k > 0:
        warpers.append(TopKLogitsWarper(k))
    if p < 1:
        warpers.append(TopPLogitsWarper(p))
    if m > 0:
        warpers.append(MinPLogitsWarper(m))
    for w in warpers:
        scores = w(None, scores)
    return torch.isfinite(scores[0])


def test_filters_match_hf_warpers():
    gen = torch.Generator().manual_seed(0)
    batch, vocab = 64, 300
    logits = torch.randn(batch, vocab, generator=gen) * 2
    temperature = torch.rand(batch, generator=gen) + 0.2
    top_k = torch.randint(-1, 60, (batch,), generator=gen)
    top_p = torch.rand(batch, generator=gen) * 0.9 + 0.05
    top_p[::4] = 1.0
    min_p = torch.rand(batch, generator=gen) * 0.3
    min_p[1::3] = 0.0
    probs = ref.filtered_probs(logits, temperature, top_k, top_p, min_p)
    for b in range(batch):
        allowed = _hf_allowed(logits[b], float(temperature[b]), int(top_k[b]), float(top_p[b]),
                              float(min_p[b]))
        assert torch.equal(probs[b] > 0, allowed), f"row {b}"
    torch.testing.assert_close(probs.sum(-1), torch.ones(batch))


def test_samples_stay_inside_the_allowed_set():
    gen = torch.Generator().manual_seed(1)
    vocab, draws = 50, 400
    logits = torch.randn(1, vocab, generator=gen).expand(draws, vocab).contiguous()
    t, k, p, m, seeds, _ = _params(draws, 0.8, 20, 0.7, 0.05, seed=5)
    steps = torch.arange(draws)
    tokens = ops.sample(logits, t, k, p, m, seeds, steps)
    allowed = _hf_allowed(logits[0], 0.8, 20, 0.7, 0.05)
    assert allowed[tokens].all()
    assert set(tokens.tolist()) == set(allowed.nonzero().flatten().tolist())


def test_greedy_is_argmax_with_lowest_index_on_ties():
    logits = torch.tensor([[0.0, 3.0, 1.0, 3.0], [5.0, 5.0, 5.0, 5.0], [-1.0, -2.0, -0.5, -3.0]])
    params = _params(3, temperature=0.0, top_k=2, top_p=0.5, min_p=0.1)
    assert ops.sample(logits, *params).tolist() == [1, 0, 2]


def test_seeded_sampling_is_reproducible_and_seed_dependent():
    gen = torch.Generator().manual_seed(2)
    logits = torch.randn(32, 1000, generator=gen)
    t, k, p, m, _, steps = _params(32)
    seeds = torch.arange(32) * 7919
    first = ops.sample(logits, t, k, p, m, seeds, steps)
    assert torch.equal(first, ops.sample(logits.clone(), t, k, p, m, seeds.clone(), steps))
    other = ops.sample(logits, t, k, p, m, seeds + 1, steps)
    later = ops.sample(logits, t, k, p, m, seeds, steps + 1)
    assert (first != other).sum() > 16 and (first != later).sum() > 16


def test_row_is_batch_invariant():
    gen = torch.Generator().manual_seed(3)
    vocab = 777
    row = torch.randn(1, vocab, generator=gen) * 2
    row_params = (torch.tensor([0.7]), torch.tensor([40]), torch.tensor([0.9]),
                  torch.tensor([0.02]), torch.tensor([-123456789012345]), torch.tensor([42]))
    alone = ops.sample(row, *row_params)
    for batch, position in ((2, 0), (5, 3), (17, 16)):
        logits = torch.randn(batch, vocab, generator=gen) * 2
        logits[position] = row[0]
        t = torch.rand(batch, generator=gen)
        k = torch.randint(0, 100, (batch,), generator=gen)
        p = torch.rand(batch, generator=gen) * 0.5 + 0.5
        m = torch.rand(batch, generator=gen) * 0.1
        s = torch.randint(-2**62, 2**62, (batch,), generator=gen)
        st = torch.randint(0, 1000, (batch,), generator=gen)
        for tensor, value in zip((t, k, p, m, s, st), row_params):
            tensor[position] = value[0]
        assert ops.sample(logits, t, k, p, m, s, st)[position] == alone[0]


def _chi_squared(counts: torch.Tensor, probs: torch.Tensor) -> float:
    expected = probs * counts.sum()
    keep = expected > 0
    assert counts[~keep].sum() == 0, "sampled a token of probability 0"
    return float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())


@pytest.mark.parametrize("temperature, top_k, top_p", [(1.0, 0, 1.0), (0.5, 5, 1.0),
                                                       (1.0, 0, 0.8)])
def test_empirical_distribution_matches_filtered_softmax(temperature, top_k, top_p):
    vocab, draws = 10, 40000
    logits = torch.linspace(-1.5, 1.2, vocab)[torch.tensor([3, 7, 0, 9, 1, 5, 8, 2, 6, 4])]
    batch_logits = logits.expand(draws, vocab).contiguous()
    t, k, p, m, _, _ = _params(draws, temperature, top_k, top_p)
    seeds = torch.full((draws,), 2024, dtype=torch.int64)
    tokens = ops.sample(batch_logits, t, k, p, m, seeds, torch.arange(draws))
    counts = torch.bincount(tokens, minlength=vocab).double()
    # Expected distribution from HF's warpers (independent of our filter code).
    scores = logits[None].clone()
    for w in [TemperatureLogitsWarper(temperature)] + ([TopKLogitsWarper(top_k)] if top_k else [])\
            + ([TopPLogitsWarper(top_p)] if top_p < 1 else []):
        scores = w(None, scores)
    probs = scores[0].double().softmax(-1)
    # 99.99th percentile of chi-squared with <= 9 degrees of freedom is about 33.7.
    assert _chi_squared(counts, probs) < 33.7


def _py_fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def test_hash_matches_python_integer_arithmetic():
    rng = random.Random(4)
    values = [0, 1, 0xFFFFFFFF, 0x80000000] + [rng.getrandbits(32) for _ in range(500)]
    tensor = torch.tensor(values, dtype=torch.int64)
    assert ref.mul32(tensor, 0x9E3779B1).tolist() == [(v * 0x9E3779B1) & 0xFFFFFFFF
                                                      for v in values]
    assert ref.fmix32(tensor).tolist() == [_py_fmix32(v) for v in values]
    seeds = [rng.getrandbits(64) - 2**63 for _ in range(8)]
    steps = [rng.getrandbits(40) for _ in range(8)]
    keys = ref.row_keys(torch.tensor(seeds), torch.tensor(steps)).tolist()
    for seed, step, key in zip(seeds, steps, keys):
        s, k = seed & (2**64 - 1), _py_fmix32((seed & 0xFFFFFFFF) ^ 0x9E3779B9)
        k = _py_fmix32(k ^ (s >> 32) ^ 0x7F4A7C15)
        k = _py_fmix32(k ^ (step & 0xFFFFFFFF) ^ 0x6A09E667)
        assert key == _py_fmix32(k ^ (step >> 32) ^ 0xBB67AE85)


def test_uniforms_are_strictly_inside_unit_interval_and_uniform():
    u = ref.uniforms(torch.arange(64), torch.zeros(64, dtype=torch.int64), 4096)
    assert u.min() > 0 and u.max() < 1
    assert abs(float(u.mean()) - 0.5) < 0.002
    counts = torch.histc(u, bins=16, min=0, max=1).double()
    assert _chi_squared(counts, torch.full((16,), 1 / 16, dtype=torch.float64)) < 45


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_hash_bits_identical_on_cuda():
    seeds = torch.randint(-2**62, 2**62, (16,))
    steps = torch.randint(0, 2**40, (16,))
    cpu = ref.uniforms(seeds, steps, 5000)
    gpu = ref.uniforms(seeds.cuda(), steps.cuda(), 5000).cpu()
    assert torch.equal(cpu, gpu)


def test_empty_batch():
    out = ops.sample(torch.empty(0, 10), *_params(0))
    assert out.shape == (0,) and out.dtype == torch.int64
