# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`Proposer.wants_features`: a proposer that declines a step's target features gets none.

The step then runs without them (`execute_model(..., features=False)`, no `observe` call for
it); steps with drafts always carry them; a proposer that raises or answers anything but False
keeps them. Greedy output never changes.
"""

from __future__ import annotations

import pytest

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.interfaces import Draft, DraftRequest

PROMPTS = [[5, 6, 7, 8, 5, 6, 7], [9, 10, 11, 9, 10], [3, 4, 3, 4, 3, 4]]


class Dimmer:
    """Reads layer 0; declines the features of every other draft-free step (`answer` then, or
    raises when `answer` is "raise"); drafts on every third round."""

    target_layer_ids = (0,)

    def __init__(self, answer: object = False) -> None:
        self.answer = answer
        self.asked = 0
        self.declined = 0
        self.rounds = 0
        self.observed: dict[str, list[int]] = {}

    def wants_features(self) -> object:
        self.asked += 1
        if self.asked % 2:
            return True
        self.declined += 1
        if self.answer == "raise":
            raise RuntimeError("wants_features broke")
        return self.answer

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        self.rounds += 1
        n = 2 if self.rounds % 3 == 0 else 0
        return [Draft([int(r.token_ids[-1])] * min(n, r.max_tokens)) for r in requests]

    def observe(self, request_id, positions, features) -> None:
        assert features.shape[0] == len(positions)
        self.observed.setdefault(request_id, []).extend(positions)

    def commit(self, request_id: str, num_tokens: int) -> None:
        pass

    def remove(self, request_id: str) -> None:
        pass


def build(folder, proposer=None, **kw) -> LLM:
    spec = None if proposer is None else {"proposer": proposer, "num_speculative_tokens": 2}
    return LLM(str(folder), max_model_len=64, block_size=4, kv_cache_memory=16 << 20, deterministic=True,
               speculative_config=spec, **kw)


def run(llm: LLM):
    return llm.generate([{"prompt_token_ids": p} for p in PROMPTS],
                        SamplingParams(temperature=0, max_tokens=12, ignore_eos=True))


def spy(llm: LLM) -> list[tuple[bool, bool, bool]]:
    """Records (features asked, drafts verified, features returned) of every `execute_model` call."""
    calls = []
    runner = llm.engine.runner
    real = runner.execute_model

    def execute_model(chunks, *args, features: bool = True, **kw):
        out = real(chunks, *args, features=features, **kw)
        calls.append((features, any(c.num_logits > 1 for c in chunks), out.aux_hidden is not None))
        return out

    runner.execute_model = execute_model
    return calls


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_declined_steps_run_and_report_without_features(tiny_checkpoint, async_scheduling: bool) -> None:
    folder = tiny_checkpoint("qwen3")
    expected = [o.outputs[0].token_ids for o in run(build(folder))]
    dimmer = Dimmer()
    llm = build(folder, dimmer, async_scheduling=async_scheduling)
    calls = spy(llm)
    outs = run(llm)
    assert [o.outputs[0].token_ids for o in outs] == expected and all(o.error is None for o in outs)
    assert llm.engine.speculative.stats.verified > 0          # drafted steps happened
    declined = [c for c in calls if not c[0]]
    assert dimmer.declined and len(declined) == dimmer.declined   # each False reached the runner
    assert all(not drafts and not returned for _, drafts, returned in declined)   # none with drafts
    assert all(returned for asked, _, returned in calls if asked)
    # The positions of declined steps are missing from what an always-True proposer observes.
    always = Dimmer(True)
    run(build(folder, always, async_scheduling=async_scheduling))
    assert always.declined and sorted(always.observed) == sorted(dimmer.observed)
    for request_id, positions in dimmer.observed.items():
        assert set(positions) < set(always.observed[request_id]) and len(set(positions)) == len(positions)


@pytest.mark.parametrize("answer", ["raise", None, 0, "no"])
def test_anything_but_false_keeps_the_features(tiny_checkpoint, answer: object) -> None:
    folder = tiny_checkpoint("qwen3")
    expected = [o.outputs[0].token_ids for o in run(build(folder))]
    dimmer = Dimmer(answer)
    llm = build(folder, dimmer)
    calls = spy(llm)
    outs = run(llm)
    assert [o.outputs[0].token_ids for o in outs] == expected and all(o.error is None for o in outs)
    assert dimmer.declined and all(asked and returned for asked, _, returned in calls)
    always = Dimmer(True)
    run(build(folder, always))
    assert dimmer.observed == always.observed


def test_steps_with_drafts_always_carry_features(tiny_checkpoint) -> None:
    """The synchronous engine does not even ask while a step carries drafts."""
    dimmer = Dimmer()
    llm = build(tiny_checkpoint("qwen3"), dimmer, async_scheduling=False)
    calls = spy(llm)
    run(llm)
    verifications = sum(1 for _, drafts, _ in calls if drafts)
    assert verifications > 0 and all(asked and returned for asked, drafts, returned in calls if drafts)
    assert dimmer.asked == len(calls) - verifications
