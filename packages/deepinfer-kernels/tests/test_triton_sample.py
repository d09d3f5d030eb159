# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton sample: the same token ids as `reference` (checked against brute force and HF's
warpers in test_ref_sampling.py) on fresh random inputs.

Random float32 logits have no near-ties (the only place the two may differ, see
backends/triton/sampling.py); the tie tests use exactly tied logits, which both implementations
map to exactly tied probabilities. Runs natively on CUDA, else under the Triton interpreter
with small vocabularies that still span several chunks (128 per chunk, 64 per search chunk).
"""

from __future__ import annotations

import pytest
import torch

from deepinfer_kernels import ops
from deepinfer_kernels.backends.reference.sampling import filtered_probs
from deepinfer_kernels.backends.triton import available
from deepinfer_kernels.testing import default_device_type, poison_allocator

DEVICE = default_device_type()
pytestmark = pytest.mark.skipif(not available(DEVICE), reason="needs CUDA or TRITON_INTERPRET=1 "
                                "set before triton's first import")
MODES = ("plain", "top_k", "top_p", "min_p", "all", "greedy_mixed")


def _params(gen: torch.Generator, batch: int, vocab: int, mode: str) -> list[torch.Tensor]:
    temperature = torch.rand(batch, generator=gen) * 1.5 + 0.2
    top_k = torch.zeros(batch, dtype=torch.int64)
    top_p = torch.ones(batch)
    min_p = torch.zeros(batch)
    if mode in ("top_k", "all", "greedy_mixed"):
        top_k = torch.randint(1, vocab + 3, (batch,), generator=gen)   # > V: off
    if mode in ("top_p", "all", "greedy_mixed"):
        top_p = torch.rand(batch, generator=gen) * 0.95 + 0.05
    if mode in ("min_p", "all", "greedy_mixed"):
        min_p = torch.rand(batch, generator=gen) * 0.3
    if mode == "greedy_mixed":
        temperature[::3] = 0.0
    seeds = torch.randint(-2**63, 2**63 - 1, (batch,), generator=gen)
    steps = torch.randint(0, 2**50, (batch,), generator=gen)
    return [temperature, top_k, top_p, min_p, seeds, steps]


def _both(logits: torch.Tensor, params: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    args = [t.to(DEVICE) for t in (logits, *params)]
    want = ops.sample(*args, backend="reference")
    poison_allocator(DEVICE)
    got = ops.sample(*args, backend="triton")
    assert got.dtype == torch.int64 and got.shape == want.shape
    return got, want


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("vocab", [37, 300])
def test_sample_matches_reference(mode, vocab):
    gen = torch.Generator().manual_seed(vocab * 10 + MODES.index(mode))
    logits = torch.randn(6, vocab, generator=gen) * 3
    got, want = _both(logits, _params(gen, 6, vocab, mode))
    assert torch.equal(got, want), f"{got.tolist()} != {want.tolist()}"


def test_sample_many_draws_of_one_row():
    """One distribution, 24 steps: the draws spread over the filtered support, every one equal."""
    gen = torch.Generator().manual_seed(3)
    logits = (torch.randn(1, 200, generator=gen) * 2).expand(24, 200).contiguous()
    params = [torch.full((24,), 0.9), torch.full((24,), 40), torch.full((24,), 0.8),
              torch.full((24,), 0.02), torch.full((24,), 1234), torch.arange(24)]
    got, want = _both(logits, params)
    assert torch.equal(got, want)
    assert len(set(got.tolist())) > 5                        # a real spread, not one token


@pytest.mark.parametrize("mode", ["top_k", "top_p", "all"])
def test_sample_exact_ties_follow_reference_tie_rules(mode):
    """Integer logits: many exactly tied probabilities at the top-k and top-p boundaries
    (top-k keeps every tie, top-p keeps ties in index order)."""
    gen = torch.Generator().manual_seed(11 + len(mode))
    logits = torch.randint(-4, 3, (12, 150), generator=gen).float()
    params = _params(gen, 12, 150, mode)
    params[0] = torch.ones(12)                               # T = 1 keeps logits exact
    got, want = _both(logits, params)
    assert torch.equal(got, want)
    kept = filtered_probs(logits, *params[:4])
    assert bool((kept[torch.arange(12), got.cpu()] > 0).all())


def test_sample_edge_rows():
    """-inf logits, one-hot rows, top_k = 1, top_p tiny, min_p = 1, and a tied greedy row."""
    vocab = 130
    logits = torch.randn(6, vocab)
    logits[0, 5:] = float("-inf")
    logits[1] = -30.0
    logits[1, 77] = 30.0
    logits[5] = 2.0                                          # greedy ties: first index
    params = [torch.tensor([1.0, 0.7, 1.3, 0.5, 2.0, 0.0]),
              torch.tensor([0, 0, 1, 0, 0, 0]),
              torch.tensor([1.0, 1.0, 1.0, 1e-6, 1.0, 1.0]),
              torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 0.0]),
              torch.arange(6) * 977, torch.arange(6) + 3]
    got, want = _both(logits, params)
    assert torch.equal(got, want)
    assert got[1] == 77 and got[5] == 0


def test_sample_empty_batch():
    logits = torch.randn(0, 40)
    params = [torch.zeros(0), torch.zeros(0, dtype=torch.int64), torch.ones(0), torch.zeros(0),
              torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64)]
    got, want = _both(logits, params)
    assert got.shape == (0,)


def test_sample_is_batch_invariant():
    gen = torch.Generator().manual_seed(8)
    logits = torch.randn(9, 90, generator=gen) * 2
    params = _params(gen, 9, 90, "all")
    args = [t.to(DEVICE) for t in (logits, *params)]
    full = ops.sample(*args, backend="triton")
    for rows in (slice(0, 1), slice(3, 7), slice(8, 9)):
        alone = ops.sample(*[t[rows] for t in args], backend="triton")
        assert torch.equal(full[rows], alone)
