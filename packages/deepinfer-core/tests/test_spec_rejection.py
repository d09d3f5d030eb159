# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""deepinfer_core.spec.rejection.verify: the output law of speculative sampling is the target's.

Exact tests drive `verify` with controlled uniforms (ops.keyed_uniforms replaced by a stub
that decodes the documented purpose key) and read the law off the function itself: the
accept threshold by bisection on u, the correction law by bisection on the exponential race.
The target law they are compared with is computed here in float64, independently.
"""

from __future__ import annotations

import math

import pytest
import torch

from deepinfer_core.spec import rejection
from deepinfer_kernels import ops

V = 8
U_MAX = 1.0 - 2.0 ** -24  # the largest float32 below 1
U_MIN = 1.5e-38


def params(num_req: int, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
           min_p: float = 0.0, seed0: int = 11, step0: int = 3) -> dict[str, torch.Tensor]:
    return dict(
        temperature=torch.full((num_req,), temperature, dtype=torch.float32),
        top_k=torch.full((num_req,), top_k, dtype=torch.int64),
        top_p=torch.full((num_req,), top_p, dtype=torch.float32),
        min_p=torch.full((num_req,), min_p, dtype=torch.float32),
        seeds=torch.arange(seed0, seed0 + num_req, dtype=torch.int64),
        steps=torch.full((num_req,), step0, dtype=torch.int64),
    )


def filtered_law(logits: torch.Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """float64 softmax(logits / T), then top-k (ties kept), then top-p, renormalised each time."""
    p = torch.softmax(logits.double() / temperature, dim=-1)
    if top_k > 0:
        kth = p.sort(descending=True).values[top_k - 1]
        p = torch.where(p >= kth, p, 0.0)
        p = p / p.sum()
    if top_p < 1.0:
        order = sorted(range(p.numel()), key=lambda v: (-p[v].item(), v))
        mass, keep = 0.0, torch.zeros_like(p, dtype=torch.bool)
        for v in order:
            if mass < top_p:
                keep[v] = True
            mass += p[v].item()
        p = torch.where(keep, p, 0.0)
        p = p / p.sum()
    return p


class ControlledUniforms:
    """Stands in for ops.keyed_uniforms: fixed accept u and residual u vector."""

    def __init__(self):
        self.accept = 0.5
        self.residual = torch.full((V,), 0.5)

    def __call__(self, seeds, steps, n):
        purpose = int(steps[0]) >> 56
        if purpose == rejection.PURPOSE_ACCEPT:
            return torch.full((seeds.numel(), n), self.accept, dtype=torch.float32)
        assert purpose == rejection.PURPOSE_RESIDUAL and n == V
        return self.residual.to(torch.float32).expand(seeds.numel(), n).clone()


def run_one(logits: torch.Tensor, draft: int, q: torch.Tensor | None, p_kw: dict) -> list[int]:
    rows = torch.stack([logits, torch.randn(V, generator=torch.Generator().manual_seed(5))])
    return rejection.verify(rows, [[draft]], [None if q is None else q[None].float()], **p_kw)[0]


def bisect(predicate, lo: float, hi: float, iters: int = 60) -> float:
    """Boundary of a predicate true on (lo, x*) and false on (x*, hi)."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if predicate(mid) else (lo, mid)
    return 0.5 * (lo + hi)


def measured_acceptance(stub, call) -> float:
    """The u threshold below which `call()` accepts (its output then has 2 tokens)."""
    def accepted(u):
        stub.accept = u
        return len(call()) == 2
    if not accepted(U_MIN):
        return 0.0
    if accepted(U_MAX):
        return 1.0
    return bisect(accepted, U_MIN, U_MAX)


def measured_race_law(stub, call) -> torch.Tensor:
    """The law of the correction draw, from the thresholds of pairwise exponential races.

    Let w win at equal draws (the residual's first maximum). With E_w = 46 for w, E = 87 for
    bystanders and E_v for v (E = -ln u), v wins iff r_v / E_v > r_w / 46, so the largest
    winning E_v is 46 * r_v / r_w.
    """
    stub.accept = U_MAX
    stub.residual = torch.full((V,), 0.5)
    w = call()[0]
    ratio = torch.zeros(V, dtype=torch.float64)
    ratio[w] = 1.0
    for v in range(V):
        if v == w:
            continue

        def v_wins(e, v=v):
            stub.residual = torch.full((V,), U_MIN, dtype=torch.float64)
            stub.residual[w] = math.exp(-46.0)
            stub.residual[v] = math.exp(-e)
            return call()[0] == v
        if not v_wins(1e-7):
            continue  # r_v / r_w < 3e-9
        ratio[v] = bisect(v_wins, 1e-7, 87.0) / 46.0
    return ratio / ratio.sum()


def single_step_law(monkeypatch, logits, q, p_kw, q_law=None):
    """Exact law of the first emitted token when one draft x ~ q_law is verified.

    Returns (law [V], acceptance [V], correction laws [V, V]) as measured from `verify`.
    """
    stub = ControlledUniforms()
    monkeypatch.setattr(ops, "keyed_uniforms", stub)
    q_law = q.double() if q_law is None else q_law
    law = torch.zeros(V, dtype=torch.float64)
    alphas = torch.zeros(V, dtype=torch.float64)
    corrections = torch.zeros(V, V, dtype=torch.float64)
    for x in range(V):
        if q_law[x] == 0:
            continue
        def call(x=x):
            return run_one(logits, x, q, p_kw)
        alphas[x] = measured_acceptance(stub, call)
        law[x] += q_law[x] * alphas[x]
        if alphas[x] < 1.0:
            corrections[x] = measured_race_law(stub, call)
            law += q_law[x] * (1.0 - alphas[x]) * corrections[x]
    return law, alphas, corrections


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_law_random_p_q(monkeypatch, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(V, generator=g) * 1.5
    q = torch.softmax(torch.randn(V, generator=g) * 1.5, dim=-1)
    p = filtered_law(logits, 0.9)
    law, alphas, corrections = single_step_law(monkeypatch, logits, q, params(1, temperature=0.9))
    torch.testing.assert_close(law, p, atol=1e-6, rtol=0)
    torch.testing.assert_close(alphas, torch.clamp(p / q.double(), max=1.0), atol=1e-6, rtol=0)
    residual = (p - q.double()).clamp(min=0)
    for x in range(V):
        if alphas[x] < 1:
            torch.testing.assert_close(corrections[x], residual / residual.sum(), atol=1e-6, rtol=0)
    assert 0 < alphas.min() < 1  # the test exercises both branches


def test_exact_law_q_equals_p(monkeypatch):
    logits = torch.randn(V, generator=torch.Generator().manual_seed(3))
    kw = params(1, temperature=0.7, top_k=6)
    q = ops.sampling_probs(logits[None], kw["temperature"], kw["top_k"], kw["top_p"], kw["min_p"])[0]
    law, alphas, _ = single_step_law(monkeypatch, logits, q, kw)
    p = filtered_law(logits, 0.7, top_k=6)
    torch.testing.assert_close(law, p, atol=1e-6, rtol=0)
    assert bool((alphas[q > 0] == 1).all())  # every draft accepted


def test_exact_law_disjoint_supports(monkeypatch):
    # Target filtered to its top 3 tokens; the draft only proposes the other 5.
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(V, generator=g)
    kw = params(1, temperature=1.2, top_k=3)
    p = filtered_law(logits, 1.2, top_k=3)
    q = torch.where(p > 0, 0.0, torch.rand(V, generator=g, dtype=torch.float64) + 0.1)
    q = (q / q.sum()).float()
    law, alphas, _ = single_step_law(monkeypatch, logits, q, kw)
    torch.testing.assert_close(law, p, atol=1e-6, rtol=0)
    assert bool((alphas == 0).all())


def test_zero_residual_mass_falls_back_to_p(monkeypatch):
    # q >= p everywhere (q slightly over-normalised): a rejection leaves no residual mass,
    # so the correction is drawn from p (DeepSpec's fallback).
    logits = torch.randn(V, generator=torch.Generator().manual_seed(6))
    kw = params(1, temperature=1.0)
    p = filtered_law(logits, 1.0)
    q = (p * (1 + 1e-6)).float()
    law, alphas, corrections = single_step_law(monkeypatch, logits, q, kw, q_law=p)
    assert bool((alphas < 1).all())
    for x in range(V):
        torch.testing.assert_close(corrections[x], p, atol=1e-6, rtol=0)
    torch.testing.assert_close(law, p, atol=1e-6, rtol=0)


def test_deterministic_proposer_is_one_hot(monkeypatch):
    # draft_probs None: q is one-hot on the draft, accept w.p. p(x), residual = p without x.
    logits = torch.randn(V, generator=torch.Generator().manual_seed(7))
    p = filtered_law(logits, 1.0)
    stub = ControlledUniforms()
    monkeypatch.setattr(ops, "keyed_uniforms", stub)
    for x in (0, 5):
        def call(x=x):
            return run_one(logits, x, None, params(1))
        assert measured_acceptance(stub, call) == pytest.approx(p[x].item(), abs=1e-6)
        expected = p.clone()
        expected[x] = 0
        torch.testing.assert_close(measured_race_law(stub, call), expected / expected.sum(), atol=1e-6, rtol=0)


def chi2_quantile(df: int, z: float = 4.265) -> float:
    """Upper quantile of chi-square (Wilson-Hilferty); z = 4.265 is the 1e-5 tail."""
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + z * math.sqrt(a)) ** 3


@pytest.mark.parametrize("proposer", ["sampled", "deterministic"])
def test_two_draft_joint_law_with_filters_by_sampling(proposer):
    """Real keyed draws: the first two emitted tokens have law p0 x p1 (chi-square, fixed seeds).

    top-k / top-p are applied identically to target and draft; tokens outside the filtered
    target support never appear.
    """
    g = torch.Generator().manual_seed(8)
    n = 30000
    temp, top_k, top_p = 0.8, 5, 0.85
    target = torch.randn(3, V, generator=g) * 1.5
    p0, p1 = filtered_law(target[0], temp, top_k, top_p), filtered_law(target[1], temp, top_k, top_p)
    kw = params(n, temp, top_k, top_p, seed0=1000, step0=17)
    if proposer == "sampled":
        draft_logits = target[:2] + torch.randn(2, V, generator=g)  # a draft close to the target
        q = ops.sampling_probs(draft_logits, kw["temperature"][:2], kw["top_k"][:2], kw["top_p"][:2],
                               kw["min_p"][:2])
        x = torch.stack([torch.multinomial(q[k].double(), n, replacement=True, generator=g) for k in range(2)], 1)
        draft_probs = [q] * n
    else:
        x = torch.tensor([[int(p0.argmax()), int(p1.argmin())]] * n)  # one likely, one filtered out
        draft_probs = [None] * n
    out = rejection.verify(target.repeat(n, 1), x.tolist(), draft_probs, **kw)
    cont = torch.multinomial(p1, n, replacement=True, generator=g).tolist()
    counts = torch.zeros(V, V, dtype=torch.float64)
    for i, o in enumerate(out):
        counts[o[0], o[1] if len(o) > 1 else cont[i]] += 1
    expected = torch.outer(p0, p1) * n
    assert counts[expected == 0].sum() == 0
    cells = expected > 0
    stat = (((counts - expected) ** 2)[cells] / expected[cells]).sum().item()
    assert stat < chi2_quantile(int(cells.sum()) - 1), stat
    assert 1.0 < sum(len(o) for o in out) / n < 3.0  # some drafts accepted, some rejected


def greedy_reference(rows: torch.Tensor, draft: list[int]) -> list[int]:
    """Plain greedy over fixed rows: the first maximum of each row, stop at the first mismatch."""
    out = []
    for j in range(len(draft) + 1):
        values = rows[j].tolist()
        best = values.index(max(values))
        out.append(best)
        if j == len(draft) or draft[j] != best:
            return out
    return out


def test_greedy_equals_plain_greedy():
    g = torch.Generator().manual_seed(9)
    num_req, vocab = 24, 16
    lens = torch.randint(0, 5, (num_req,), generator=g).tolist()
    # Rounded logits create ties: greedy must pick the lowest index, like ops.sample.
    logits = (torch.randn(sum(lens) + num_req, vocab, generator=g) * 2).round() / 2
    assert int((logits == logits.max(dim=1, keepdim=True).values).sum(dim=1).gt(1).sum()) > 0
    drafts, draft_probs, row = [], [], 0
    for r, n in enumerate(lens):
        d = []
        for j in range(n):
            best = greedy_reference(logits[row + j: row + j + 1], [])[0]
            other = int(torch.randint(0, vocab, (1,), generator=g))
            d.append(best if torch.rand(1, generator=g).item() < 0.75 else other)
        drafts.append(d)
        draft_probs.append(torch.softmax(torch.randn(n, vocab, generator=g), -1) if r % 2 else None)
        row += n + 1
    kw = params(num_req, temperature=0.0)
    out = rejection.verify(logits, drafts, draft_probs, **kw)
    row = 0
    for r, n in enumerate(lens):
        rows = logits[row: row + n + 1]
        assert out[r] == greedy_reference(rows, drafts[r])
        plain = ops.sample(rows, torch.zeros(n + 1), kw["top_k"][r].repeat(n + 1),
                           kw["top_p"][r].repeat(n + 1), kw["min_p"][r].repeat(n + 1),
                           kw["seeds"][r].repeat(n + 1), kw["steps"][r].repeat(n + 1))
        assert out[r] == plain[: len(out[r])].tolist()
        row += n + 1
    assert any(len(o) > 1 for o in out) and any(len(o) < n + 1 for o, n in zip(out, lens))


def test_no_drafts_equals_ops_sample():
    g = torch.Generator().manual_seed(10)
    num_req, vocab = 32, 50
    logits = torch.randn(num_req, vocab, generator=g) * 2
    kw = dict(
        temperature=torch.tensor([0.0, 0.5, 1.0, 1.3] * 8),
        top_k=torch.tensor([0, 5] * 16),
        top_p=torch.tensor([1.0, 1.0, 0.8, 0.8] * 8),
        min_p=torch.tensor([0.0] * 16 + [0.05] * 16),
        seeds=torch.randint(-2 ** 62, 2 ** 62, (num_req,), generator=g),
        steps=torch.randint(0, 10000, (num_req,), generator=g),
    )
    out = rejection.verify(logits, [[] for _ in range(num_req)], [None] * num_req, **kw)
    assert out == [[t] for t in ops.sample(logits, **kw).tolist()]


def test_seeds_honoured_and_batch_invariant():
    g = torch.Generator().manual_seed(12)
    num_req, vocab, n = 64, 32, 3
    logits = torch.randn(num_req * (n + 1), vocab, generator=g) * 0.3  # high entropy
    q = torch.softmax(torch.randn(n, vocab, generator=g) * 0.3, -1)
    drafts = torch.randint(0, vocab, (num_req, n), generator=g).tolist()
    kw = params(num_req, temperature=1.0, seed0=500)
    first = rejection.verify(logits, drafts, [q] * num_req, **kw)
    assert rejection.verify(logits, drafts, [q] * num_req, **kw) == first
    other = dict(kw, seeds=kw["seeds"] + 1000)
    different = rejection.verify(logits, drafts, [q] * num_req, **other)
    assert sum(a != b for a, b in zip(first, different)) > num_req // 2
    # Reversed batch order: every request gets the same tokens.
    rev_rows = logits.view(num_req, n + 1, vocab).flip(0).reshape(-1, vocab)
    rev_kw = {k: v.flip(0) for k, v in kw.items()}
    reversed_out = rejection.verify(rev_rows, drafts[::-1], [q] * num_req, **rev_kw)
    assert reversed_out[::-1] == first


def test_residual_and_acceptance_helpers_float64():
    p = torch.tensor([0.5, 0.3, 0.2, 0.0], dtype=torch.float64)
    q = torch.tensor([0.25, 0.25, 0.25, 0.25], dtype=torch.float64)
    torch.testing.assert_close(rejection.residual_probs(p, q), torch.tensor([0.5, 0.1, 0.0, 0.0]).double() / 0.6)
    torch.testing.assert_close(rejection.residual_probs(p, p), p)
    torch.testing.assert_close(rejection.acceptance_probs(p, q), torch.tensor([1.0, 1.0, 0.8, 0.0]).double())
    assert rejection.acceptance_probs(torch.tensor([0.3]), torch.tensor([0.0])).item() == 0.0


@pytest.mark.parametrize(("change", "field"), [
    (lambda a: a.update(target_logits=a["target_logits"][:-1]), "target_logits"),
    (lambda a: a.update(drafts=[[V]]), "drafts[0]"),
    (lambda a: a.update(draft_probs=[torch.ones(2, V)]), "draft_probs[0]"),
    (lambda a: a.update(draft_probs=[]), "draft_probs"),
    (lambda a: a.update(seeds=a["seeds"].int()), "seeds"),
    (lambda a: a.update(top_p=torch.ones(2)), "top_p"),
])
def test_bad_input_names_field(change, field):
    args = dict(target_logits=torch.randn(2, V), drafts=[[1]], draft_probs=[None], **params(1))
    change(args)
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        rejection.verify(**args)


def test_all_greedy_fast_path_equals_general_path():
    """The all-greedy shortcut must emit what the general (probabilistic) path emits for greedy rows.

    The general path runs when one temperature > 0 row joins the batch; its greedy rows use the
    argmax comparison inside the rejection sampler, so the two implementations are independent.
    """
    gen = torch.Generator().manual_seed(7)
    vocab, num_req = 50, 12
    drafts = []
    rows = []
    for r in range(num_req):
        n = r % 5
        logits = torch.randn(n + 1, vocab, generator=gen)
        best = logits.argmax(dim=-1).tolist()
        keep = int(torch.randint(0, n + 1, (1,), generator=gen))   # a matching prefix, then a miss
        draft = best[:keep] + [(best[i] + 1) % vocab for i in range(keep, n)]
        drafts.append(draft)
        rows.append(logits)
    extra_logits = torch.randn(3, vocab, generator=gen)
    extra_draft = [1, 2]
    greedy = rejection.verify(torch.cat(rows), drafts, [None] * num_req, *_params(num_req, 0.0))
    temps, top_k, top_p, min_p, seeds, steps = _params(num_req + 1, 0.0)
    temps[-1] = 1.0
    mixed = rejection.verify(torch.cat(rows + [extra_logits]), drafts + [extra_draft],
                   [None] * num_req + [torch.full((2, vocab), 1.0 / vocab)], temps, top_k, top_p, min_p, seeds, steps)
    assert greedy == mixed[:num_req]
    assert any(len(d) > 0 and len(out) == len(d) + 1 for d, out in zip(drafts, greedy))   # a full acceptance
    assert any(len(out) <= len(d) for d, out in zip(drafts, greedy))                       # a rejection


def _params(num_req: int, temperature: float):
    return (torch.full((num_req,), temperature), torch.zeros(num_req, dtype=torch.int64),
            torch.ones(num_req), torch.zeros(num_req), torch.arange(num_req, dtype=torch.int64),
            torch.zeros(num_req, dtype=torch.int64))
