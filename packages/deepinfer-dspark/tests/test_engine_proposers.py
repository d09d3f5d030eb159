# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The engine with DSpark and n-gram proposers (loaded by entry point, as users load them).

Greedy output with speculation is token-identical to greedy output without it (fp32,
deterministic kernels), batched and under preemption, for DSpark with fixed-length and
confidence-scheduled verification and for n-gram lookup. At temperature 1 the distribution of
the drafted tokens matches plain sampling (chi-squared); a proposer that misreports its draft
distribution is caught by the same test (negative control).
"""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
import torch
from deepinfer_core import LLM, SamplingParams
from deepinfer_core.interfaces import Draft

from deepinfer_dspark.sps import SPSProfile


def spec_configs(drafter) -> dict[str, dict]:
    flat = SPSProfile([1, 64, 256], [1000.0, 990.0, 700.0])  # cheap extra tokens: verify most drafts
    return {
        "dspark-fixed": {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4},
        "dspark-confidence": {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4,
                              "scheduling": "confidence", "sps_profile": flat},
        # Round time interpolated in the verified tokens (`VerifyRates`): shorter verification.
        "dspark-confidence-k1": {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4,
                                 "scheduling": "confidence", "sps_profile": flat,
                                 "sps_profile_k1": SPSProfile([2, 128, 512], [1200.0, 1190.0, 840.0])},
        "ngram": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3},
    }


def test_greedy_speculation_equals_plain_greedy(folders, kit) -> None:
    target, drafter = folders
    batch = kit.prompts(6, seed=1)
    expected = kit.greedy(kit.build(target), batch)
    for name, spec in spec_configs(drafter).items():
        llm = kit.build(target, spec)
        assert kit.greedy(llm, batch) == expected, f"{name}, batched"
        assert kit.greedy(llm, batch[:1]) == expected[:1], f"{name}, alone"
        stats = llm.engine.speculative.stats
        assert stats.verified > 0, f"{name} never verified a draft"
        if name == "ngram":
            assert stats.accepted > 0  # repeated motifs: lookups hit


def test_greedy_speculation_under_preemption(folders, kit) -> None:
    target, drafter = folders
    batch = kit.prompts(8, seed=2)
    expected = kit.greedy(kit.build(target), batch)
    per_block = kit.build(target).engine.runner.kv_bytes_per_block()
    for name, spec in spec_configs(drafter).items():
        tight = kit.build(target, spec, kv_cache_memory=42 * per_block, max_num_batched_tokens=64)
        assert kit.greedy(tight, batch) == expected, name
        assert tight.engine.num_preemptions > 0, name


def test_confidence_scheduling_shortens_verification_under_a_steep_profile(folders, kit) -> None:
    target, drafter = folders
    steep = SPSProfile([1, 2, 64], [1000.0, 500.0, 10.0])  # every extra token halves the step rate
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": steep}
    llm = kit.build(target, spec)
    batch = kit.prompts(4, seed=3)
    assert kit.greedy(llm, batch) == kit.greedy(kit.build(target), batch)
    flat_llm = kit.build(target, spec_configs(drafter)["dspark-confidence"])
    kit.greedy(flat_llm, batch)
    assert llm.engine.speculative.stats.verified < flat_llm.engine.speculative.stats.verified
    # Nothing worth verifying at this load: drafting itself is skipped (probing now and then).
    assert llm.engine.speculative.proposer.skipped_rounds > 0
    # (the flat profile drafts every round it is asked; a round with no request to ask, the last
    # one when no request has room left, reaches it as an idle round)
    assert flat_llm.engine.speculative.proposer.skipped_rounds <= 2
    # The engine's commits after each verification reach the realized acceptance ratio: a random
    # drafter's drafts are rarely accepted whatever its confidences predict.
    stats, acceptance = flat_llm.engine.speculative.stats, flat_llm.engine.speculative.proposer.acceptance
    assert acceptance.rounds > 0 and stats.verified > 0
    realized = sum(m.realized for m in acceptance._all.values())   # decayed sums of the accepted drafts reported
    ratio = acceptance.ratio(4, opening=True)   # 24-token replies: every round is in the openings
    assert ratio < 0.5 and (realized == 0) == (stats.accepted == 0), (ratio, stats)


class MisreportingProposer:
    """Always drafts the likeliest next token but reports a uniform draft distribution: the
    verifier then accepts it with probability min(1, p / (1/V)) = 1, which is not lossless."""

    def __init__(self, best_next: dict[int, int], vocab: int) -> None:
        self.best_next, self.vocab = best_next, vocab

    def propose(self, requests):
        uniform = torch.full((1, self.vocab), 1.0 / self.vocab)
        return [Draft([self.best_next[r.token_ids[-1]]], uniform) if r.token_ids[-1] in self.best_next
                else Draft([]) for r in requests]

    def commit(self, request_id, num_tokens):
        pass

    def remove(self, request_id):
        pass


def second_tokens(llm: LLM, prompt: list[int], n: int) -> Counter:
    """Counts of the first two sampled tokens; the second is the drafted position (max_tokens 3
    leaves room for one draft after the first token, then the bonus)."""
    params = [SamplingParams(temperature=1.0, top_k=6, max_tokens=3, ignore_eos=True, seed=s) for s in range(n)]
    outs = llm.generate([{"prompt_token_ids": prompt}] * n, params)
    return Counter(tuple(o.outputs[0].token_ids[:2]) for o in outs)


def chi2_pvalue(a: Counter, b: Counter) -> float:
    """Two-sample chi-squared test of homogeneity (bins with fewer than 10 pooled counts merged);
    p-value from the chi-squared survival function, Q(df / 2, stat / 2) (regularised gamma)."""
    keys = sorted(set(a) | set(b), key=lambda k: -(a[k] + b[k]))
    rows, rest = [], [0, 0]
    for k in keys:
        if a[k] + b[k] >= 10:
            rows.append([a[k], b[k]])
        else:
            rest[0] += a[k]
            rest[1] += b[k]
    if sum(rest) > 0:
        rows.append(rest)
    counts = torch.tensor(rows, dtype=torch.float64)
    expected = counts.sum(1, keepdim=True) * counts.sum(0, keepdim=True) / counts.sum()
    stat = ((counts - expected) ** 2 / expected).sum()
    df = torch.tensor(float(len(rows) - 1), dtype=torch.float64)
    return float(torch.special.gammaincc(df / 2, stat / 2))


def test_sampled_distribution_matches_plain_sampling(folders, kit) -> None:
    target, drafter = folders
    prompt = kit.prompts(1, seed=4)[0]
    n = 3000
    plain = second_tokens(kit.build(target, max_num_seqs=256), prompt, n)
    spec = kit.build(target, spec_configs(drafter)["dspark-fixed"], max_num_seqs=256)
    drafted = second_tokens(spec, prompt, n)
    assert spec.engine.speculative.stats.verified > 0
    assert chi2_pvalue(plain, drafted) > 1e-3
    best_next = {}
    for (first, second), _ in sorted(plain.items(), key=lambda kv: kv[1]):
        best_next[first] = second  # ascending counts: the most common second token wins
    liar_spec = {"proposer": MisreportingProposer(best_next, kit.vocab), "num_speculative_tokens": 1}
    liar = second_tokens(kit.build(target, liar_spec, max_num_seqs=256), prompt, n)
    assert chi2_pvalue(plain, liar) < 1e-6, "the negative control passed: the test cannot see a biased verifier"
    assert math.isfinite(chi2_pvalue(plain, drafted))


def test_the_draft_context_pool_is_reserved_for_the_engines_batch(folders, kit) -> None:
    """The factory reserves the context pool for max_num_seqs requests of max_model_len
    positions, no more than the KV cache holds (`reserve_blocks`), and a full batch of requests
    as long as max_model_len never grows it (a growth drops the captured draft graphs); the old
    first size, 64 blocks, would have grown twice here."""
    from deepinfer_dspark.context_pool import reserve_blocks

    target, drafter = folders
    spec = spec_configs(drafter)["dspark-fixed"]
    seqs, length = 8, 320
    llm = kit.build(target, spec, max_num_seqs=seqs, max_model_len=length)
    runner = llm.engine.speculative.proposer.runner
    pool, cfg = runner.context, runner.drafter.config
    kv_tokens = llm.config.kv_cache_memory // llm.engine.runner.kv_bytes_per_block() * llm.config.block_size
    position = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * 4   # float32
    assert kv_tokens >= seqs * length   # the batch's bound holds here
    assert pool.num_blocks == reserve_blocks(seqs, length, pool.block_size, position, kv_tokens) \
        == seqs * -(-length // pool.block_size) == 80
    generation, rng = pool.generation, random.Random(3)
    batch = [[rng.randrange(kit.vocab - 3) for _ in range(length - 30)] for _ in range(seqs)]
    outs = llm.generate([{"prompt_token_ids": p} for p in batch],
                        SamplingParams(temperature=0, max_tokens=28, ignore_eos=True))
    assert all(o.error is None and len(o.outputs[0].token_ids) == 28 for o in outs)
    assert pool.generation == generation and sum(len(pool.block_table(r)) for r in pool.request_ids) == 0
    small = kit.build(target, spec, max_num_seqs=1, max_model_len=64).engine.speculative.proposer.runner.context
    assert small.num_blocks == 2   # exactly what one request of 64 positions needs
    with pytest.raises(ValueError, match="^kv_cache_memory"):   # no KV block: the core names its own field
        kit.build(target, spec, kv_cache_memory=4095)
