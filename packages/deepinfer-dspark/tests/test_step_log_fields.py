# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/engine_probes.StepTimes` with a log: each step's emitted tokens and accepted and
verified drafts add up to the requests' own counts (`RequestMetrics`), and `reply` says where in
the replies each step ran (session 24: where confidence scheduling's drafted rounds sat)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from deepinfer_core import SamplingParams


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_step_log_counts_match_the_requests(benchmark_script, monkeypatch, folders, kit, async_scheduling) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    probes = benchmark_script("engine_probes")
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 3}
    llm = kit.build(target, spec, async_scheduling=async_scheduling)
    log: list[dict] = []
    probes.StepTimes(llm, log)
    outs = llm.generate([{"prompt_token_ids": p} for p in kit.prompts(3, seed=2)],
                        SamplingParams(temperature=0, max_tokens=20, ignore_eos=True))
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    assert tokens == 60 and sum(row["emitted"] for row in log) == tokens
    assert sum(row["accepted"] for row in log) == sum(o.metrics.spec_accepted for o in outs)
    verified = sum(o.metrics.spec_verified for o in outs)
    assert verified > 0 and sum(row["verified"] for row in log) == verified
    replies = [row["reply"] for row in log]
    assert replies[0] == 0 and max(replies) >= 15   # the shortest running reply, before each step
    assert all(row["accepted"] <= row["verified"] for row in log)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
