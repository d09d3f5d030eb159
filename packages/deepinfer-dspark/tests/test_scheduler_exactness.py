# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Joint exactness of confidence-scheduled speculative sampling, by exhaustive enumeration.

A toy target p(. | prefix) and a toy DSpark-style drafter (base logits + Markov bias,
confidence from (h_k, x_{k-1})) over V = 4, gamma = 3, R = 2 requests. Every draft path of
both requests goes through the production scheduler; every accept/reject outcome is
weighted by the acceptance law of `deepinfer_core.spec.rejection` (min(1, p/q) and the
residual). Tokens a round does not emit are completed by plain target sampling, so the
round is lossless iff the law of the first gamma + 1 tokens equals the target's.
"""

from __future__ import annotations

import functools
import itertools

import pytest
import torch

from deepinfer_core.spec.rejection import acceptance_probs, residual_probs
from deepinfer_dspark import SPSProfile, prefix_survival, schedule_prefixes, top_k_prefixes, verify_capacity

V, GAMMA, OUT = 4, 3, 4  # OUT = gamma + 1 tokens per round at most


class ToyTarget:
    """p(v | ctx) = softmax(A[ctx[-1]] + B[ctx[-2]] + C[len(ctx) % 3])."""

    def __init__(self, vocab: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.a = torch.randn(vocab, vocab, generator=g, dtype=torch.float64) * 1.2
        self.b = torch.randn(vocab, vocab, generator=g, dtype=torch.float64) * 0.8
        self.c = torch.randn(3, vocab, generator=g, dtype=torch.float64) * 0.5
        self.vocab = vocab

    @functools.lru_cache(maxsize=None)
    def probs(self, ctx: tuple[int, ...]) -> torch.Tensor:
        return torch.softmax(self.a[ctx[-1]] + self.b[ctx[-2]] + self.c[len(ctx) % 3], dim=0)

    @functools.lru_cache(maxsize=None)
    def law(self, ctx: tuple[int, ...], n: int) -> torch.Tensor:
        """Law of the next n tokens, flattened over V**n sequences (first token major)."""
        if n == 0:
            return torch.ones(1, dtype=torch.float64)
        p = self.probs(ctx)
        return torch.cat([p[v] * self.law(ctx + (v,), n - 1) for v in range(self.vocab)])


class ToyDrafter:
    """q_k(. | x_{k-1}) = softmax(W h_k + W2 W1[x_{k-1}]); c_k = sigmoid(w . [h_k; W1[x_{k-1}]] + b)."""

    def __init__(self, vocab: int, gamma: int, seed: int, d: int = 3, rank: int = 2):
        g = torch.Generator().manual_seed(seed)
        self.h = torch.randn(gamma, d, generator=g, dtype=torch.float64)
        self.lm = torch.randn(vocab, d, generator=g, dtype=torch.float64)
        self.w1 = torch.randn(vocab, rank, generator=g, dtype=torch.float64)
        self.w2 = torch.randn(vocab, rank, generator=g, dtype=torch.float64)
        # The confidence leans on the previous token, so it varies along the draft path.
        self.w_conf = torch.randn(d + rank, generator=g, dtype=torch.float64) * torch.tensor([0.3] * d + [2.0] * rank)
        self.b_conf = 1.0

    def q(self, k: int, prev: int) -> torch.Tensor:
        return torch.softmax(self.lm @ self.h[k] + self.w2 @ self.w1[prev], dim=0)

    def confidence(self, k: int, prev: int) -> float:
        z = torch.cat([self.h[k], self.w1[prev]]) @ self.w_conf + self.b_conf
        return float(torch.sigmoid(z))


def index(seq: tuple[int, ...]) -> int:
    out = 0
    for v in seq:
        out = out * V + v
    return out


def round_law(target: ToyTarget, drafter: ToyDrafter, ctx: tuple[int, ...], path: tuple[int, ...],
              ell: int) -> torch.Tensor:
    """Law of the first OUT tokens when `ell` drafts of `path` are verified (then plain sampling)."""
    law = torch.zeros(V ** OUT, dtype=torch.float64)

    def emit(prefix: tuple[int, ...], prob: float) -> None:
        rest = target.law(ctx + prefix, OUT - len(prefix))
        base = index(prefix) * V ** (OUT - len(prefix))
        law[base: base + rest.numel()] += prob * rest

    reach = 1.0  # probability that drafts 1..k-1 were accepted
    prev = ctx[-1]
    for k in range(ell):
        p, q = target.probs(ctx + path[:k]), drafter.q(k, prev)
        x = path[k]
        alpha = float(acceptance_probs(p[x], q[x]))
        residual = residual_probs(p, q)
        for v in range(V):
            emit(path[:k] + (v,), reach * (1 - alpha) * float(residual[v]))
        reach *= alpha
        prev = x
    bonus = target.probs(ctx + path[:ell])
    for v in range(V):
        emit(path[:ell] + (v,), reach * float(bonus[v]))
    return law


class Setup:
    """Both requests' draft paths, their probabilities, confidences and round laws."""

    def __init__(self, seed: int = 0):
        self.target = ToyTarget(V, seed)
        self.ctx = [(0, 2, 1), (3, 1, 3)]
        self.drafters = [ToyDrafter(V, GAMMA, seed + 10), ToyDrafter(V, GAMMA, seed + 20)]
        self.paths = list(itertools.product(range(V), repeat=GAMMA))
        self.path_prob, self.conf, self.laws = [], [], []
        for ctx, drafter in zip(self.ctx, self.drafters):
            probs, confs, laws = [], [], []
            for path in self.paths:
                prevs = (ctx[-1],) + path[:-1]
                probs.append(float(torch.tensor([drafter.q(k, prevs[k])[path[k]] for k in range(GAMMA)]).prod()))
                # c_k sees h_k and x_{k-1} only (non-anticipating by construction).
                confs.append([drafter.confidence(k, prevs[k]) for k in range(GAMMA)])
                laws.append([round_law(self.target, drafter, ctx, path, ell) for ell in range(GAMMA + 1)])
            self.path_prob.append(probs)
            self.conf.append(confs)
            self.laws.append(laws)

    def target_laws(self) -> list[torch.Tensor]:
        return [self.target.law(ctx, OUT) for ctx in self.ctx]

    def output_laws(self, scheduler) -> tuple[list[torch.Tensor], torch.Tensor, set]:
        """Per-request output laws, their joint, and the set of (l_0, l_1) the scheduler chose."""
        marginals = [torch.zeros(V ** OUT, dtype=torch.float64) for _ in range(2)]
        joint = torch.zeros(V ** OUT, V ** OUT, dtype=torch.float64)
        chosen = set()
        for i, j in itertools.product(range(len(self.paths)), repeat=2):
            conf = torch.tensor([self.conf[0][i], self.conf[1][j]], dtype=torch.float64)
            ell = scheduler(prefix_survival(conf)).tolist()
            chosen.add(tuple(ell))
            w = self.path_prob[0][i] * self.path_prob[1][j]
            law0, law1 = self.laws[0][i][ell[0]], self.laws[1][j][ell[1]]
            marginals[0] += w * law0
            marginals[1] += w * law1
            joint += w * torch.outer(law0, law1)
        return marginals, joint, chosen


@pytest.fixture(scope="module")
def setup() -> Setup:
    return Setup()


# A jagged step-time curve (a jump at the first verified draft, a plateau, a jump at 8):
# Algorithm 1 picks many different (l_0, l_1), and Theta is not unimodal along the ranking,
# so the search without early stop differs from it.
SPS = SPSProfile([2, 3, 4, 5, 6, 7, 8], [1 / t for t in (1.00, 1.10, 1.15, 1.18, 1.20, 1.22, 1.60)])


def assert_lossless(setup: Setup, scheduler) -> set:
    marginals, joint, chosen = setup.output_laws(scheduler)
    targets = setup.target_laws()
    for r in range(2):
        torch.testing.assert_close(marginals[r], targets[r], atol=1e-9, rtol=0)
    torch.testing.assert_close(joint, torch.outer(targets[0], targets[1]), atol=1e-9, rtol=0)
    return chosen


def test_algorithm1_is_lossless(setup):
    chosen = assert_lossless(setup, lambda s: schedule_prefixes(s, SPS))
    # The schedule really depends on the drafts: several different (l_0, l_1) occur.
    assert len(chosen) >= 4, chosen


@pytest.mark.parametrize("old_seed", [2, 3, 4])  # capacities 5, 3, 5
def test_stale_capacity_top_k_is_lossless(setup, old_seed):
    old = prefix_survival(torch.rand(2, GAMMA, generator=torch.Generator().manual_seed(old_seed),
                                     dtype=torch.float64))
    capacity = verify_capacity(old, SPS)
    assert capacity > 0
    chosen = assert_lossless(setup, lambda s: top_k_prefixes(s, capacity))
    assert {sum(c) for c in chosen} <= {capacity}


@pytest.mark.parametrize("capacity", [0, 1, 3, 2 * GAMMA])
def test_top_k_is_lossless_for_every_capacity(setup, capacity):
    assert_lossless(setup, lambda s: top_k_prefixes(s, capacity))


def test_full_search_without_early_stop_is_biased(setup):
    # Negative control: the same enumeration detects the bias of the no-break search.
    marginals, _, _ = setup.output_laws(lambda s: schedule_prefixes(s, SPS, early_stop=False))
    error = max((m - t).abs().max().item() for m, t in zip(marginals, setup.target_laws()))
    assert error > 1e-4, error


def appendix_a_first_token_law(early_stop: bool) -> list[float]:
    """DSpark Appendix A: p = (0.7, 0.3), q = (0.5, 0.5), SPS(1, 2, 3) = (1, 0.5, 0.45),
    c_1 = 0.9, c_2 = 0.9 after x_1 = A and 0 after x_1 = B; one request, gamma = 2."""
    sps = SPSProfile([1, 2, 3], [1.0, 0.5, 0.45])
    p = torch.tensor([0.7, 0.3], dtype=torch.float64)
    q = torch.tensor([0.5, 0.5], dtype=torch.float64)
    law = torch.zeros(2, dtype=torch.float64)
    for x1 in range(2):
        conf = torch.tensor([[0.9, 0.9 if x1 == 0 else 0.0]], dtype=torch.float64)
        ell = int(schedule_prefixes(prefix_survival(conf), sps, early_stop=early_stop)[0])
        if ell == 0:
            law += q[x1] * p  # plain decode: the bonus token from p
        else:
            alpha = float(acceptance_probs(p[x1], q[x1]))
            law[x1] += q[x1] * alpha
            law += q[x1] * (1 - alpha) * residual_probs(p, q)
    return law.tolist()


def test_appendix_a_negative_control():
    assert appendix_a_first_token_law(early_stop=True) == pytest.approx([0.7, 0.3], abs=1e-12)
    assert appendix_a_first_token_law(early_stop=False) == pytest.approx([0.85, 0.15], abs=1e-12)
