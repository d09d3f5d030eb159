# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/round_trace.py`: each judged round's inputs against what the target accepted,
on the tiny engine (the random drafter's drafts are mostly rejected)."""

from __future__ import annotations

import pytest
from deepinfer_core import SamplingParams

from deepinfer_dspark.sps import SPSProfile


def test_trace_records_each_judged_round(benchmark_script, folders, kit) -> None:
    round_trace = benchmark_script("round_trace")
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [900.0, 890.0]), "decode_profile": SPSProfile([1, 64], [1000.0, 990.0]),
            "prompt_lookup_min": 0}   # (the trace follows DSpark's rounds; lookup drafts would count in spec_accepted)
    llm = kit.build(target, spec)
    proposer = llm.engine.speculative.proposer
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    batches = [[{"prompt_token_ids": p}] for p in kit.prompts(2, seed=4)]
    expected = kit.greedy(kit.build(target), [b[0]["prompt_token_ids"] for b in batches])
    outs = []
    rounds = round_trace.trace(llm, batches, lambda batch: outs.extend(llm.generate(batch, params)))
    assert [o.outputs[0].token_ids for o in outs] == expected            # output untouched
    assert rounds and {r["call"] for r in rounds} <= {0, 1} and all(r["batch"] == 1 for r in rounds)
    assert all(0 <= r["accepted"] <= r["verified"] <= 4 for r in rounds)
    drafted = sum(o.metrics.spec_accepted for o in outs)
    assert sum(r["accepted"] for r in rounds) == drafted                  # every commit counted
    assert all(r["opening"] for r in rounds)                              # 24 tokens: all in the opening
    assert rounds[-1]["gain"] == proposer.openings.ledger.gain(1) and rounds[0]["gain_before"] is None
    assert all(r["expected"] is not None for r in rounds)                  # every round judged here
    # A first round is the average (an opening's gain is judged against `worth_skipping`).
    assert rounds[0]["gain"] == pytest.approx(rounds[0]["round_gain"] / proposer.openings.worth_skipping)
    assert all(r["round_ms"] > 0 and r["plain_ms"] > 0 and r["tau"] >= 1 for r in rounds)
    assert "gain" not in vars(proposer.costs)                             # the pricing hook is removed
    assert proposer._plan_pause.__name__ == "_plan_pause"                 # the hooks are removed
    assert proposer.acceptance.begin.__name__ == "begin"


def test_by_position_sums_a_fixed_engines_rounds(benchmark_script, folders, kit) -> None:
    """`by_position`: a fixed-length engine's rounds by reply position; the sums match the
    engine's own counters, and the hooks are removed."""
    round_trace = benchmark_script("round_trace")
    target, drafter = folders
    llm = kit.build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 3})
    params = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)
    outs = []
    batches = [[{"prompt_token_ids": p} for p in kit.prompts(2, seed=6)]]
    sums = round_trace.by_position(llm, batches, lambda batch: outs.extend(llm.generate(batch, params)), width=16)
    assert set(sums) <= {0, 1, 2} and len(sums) >= 2                       # 40 tokens: buckets of 16
    rounds, verified, accepted = (sum(row[i] for row in sums.values()) for i in range(3))
    assert rounds == sum(o.metrics.spec_rounds for o in outs)
    assert verified == sum(o.metrics.spec_verified for o in outs)
    assert accepted == sum(o.metrics.spec_accepted for o in outs)
    assert llm.engine.speculative.proposer.propose.__name__ == "propose"
