# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/context_parity.py`: an engine paused by force (features buffered, then flushed)
builds the drafter context of an engine that drafts every round, and drafts the same tokens
from the same anchors; a corrupted buffer (the negative control) is caught."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from deepinfer_core import SamplingParams


@pytest.fixture
def parity(benchmark_script, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    return benchmark_script("context_parity")


def _pair(parity, folders, kit):
    target, drafter = folders
    fixed, paused = parity.specs(str(drafter), 4)
    return kit.build(target, fixed), kit.build(target, paused)


def test_paused_engine_builds_the_always_drafting_engines_context(parity, folders, kit) -> None:
    always, paused = _pair(parity, folders, kit)
    inputs = [{"prompt_token_ids": p} for p in kit.prompts(3, seed=4)]
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    results, verified = parity.run_pair(always, paused, inputs, params, draft_run=2, pause=3, chat=False)
    assert len(results) == 3 and sum(parity.mismatches(r) for r in results) == 0, results
    # (a finished request's rows still buffered are dropped, so the paused context may be shorter)
    assert all(r["na"] >= r["nb"] > 24 and r["diff"] < 1e-4 for r in results)
    assert all(0 < r["common"] < r["ra"] for r in results)   # the paused engine skipped rounds, and drafted
    assert paused.engine.speculative.proposer.skipped_rounds > 0 and sum(verified.values()) > 0


def test_a_prompt_buffered_while_paused_builds_the_same_context(parity, folders, kit) -> None:
    """The paused engine is paused when each request arrives: the prompt's features wait in the
    buffer with the first decode steps' (session 24: at 1 request the H200's confidence engine
    paused each reply's opening, then drafted its body at half fixed-7's acceptance)."""
    always, paused = _pair(parity, folders, kit)
    inputs = [{"prompt_token_ids": p} for p in kit.prompts(3, seed=6)]
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    results, _ = parity.run_pair(always, paused, inputs, params, draft_run=4, pause=2, chat=False, pause_first=5)
    assert sum(parity.mismatches(r) for r in results) == 0, results
    assert all(r["common"] > 0 and r["rb"] < r["ra"] for r in results)


def test_declined_steps_never_let_a_holed_context_draft(parity, folders, kit) -> None:
    """Steps whose features are declined (forced here, two in every 30 asks) leave gaps: the
    requests concerned draft no more, so every draft still comes from a context equal to the
    always-drafting engine's."""
    target, drafter = folders
    fixed, paused_spec = parity.specs(str(drafter), 4)
    always, paused = kit.build(target, fixed), kit.build(target, {**paused_spec, "decline_features": True})
    proposer = paused.engine.speculative.proposer
    original, asks = proposer.wants_features, [0]

    def wants_features() -> bool:
        asks[0] += 1
        return False if asks[0] % 30 in (8, 9) else original()

    proposer.wants_features = wants_features
    inputs = [{"prompt_token_ids": p} for p in kit.prompts(4, seed=4)]
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    results, _ = parity.run_pair(always, paused, inputs, params, draft_run=3, pause=4, chat=False)
    assert sum(parity.mismatches(r) for r in results) == 0, results
    assert any(r["rb"] > 0 for r in results) and any(r["nb"] < r["na"] for r in results)


def test_a_corrupted_buffer_is_caught(parity, folders, kit) -> None:
    always, paused = _pair(parity, folders, kit)
    feed = paused.engine.speculative.proposer.feed
    original = feed.add_step

    def add_step(request_ids, first_positions, counts, row_starts, features, paused_now):
        if feed.buffers(paused_now):   # only what waits for a flush is corrupted
            features = features.flip(-1)   # (a scale would not do: the projection is RMS-normed)
        return original(request_ids, first_positions, counts, row_starts, features, paused_now)

    feed.add_step = add_step
    inputs = [{"prompt_token_ids": p} for p in kit.prompts(2, seed=4)]
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    results, _ = parity.run_pair(always, paused, inputs, params, draft_run=2, pause=3, chat=False)
    assert all(r["first_bad"] >= 0 for r in results), results
    assert all(r["same_reply"] for r in results)   # lossless whatever the drafter saw


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
