# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`Proposer.running`: called before a `propose` that is not asked about every running request,
with the number running (what `idle_round` and `dormant_rounds` count); a raising one fails
the asked requests only."""

from __future__ import annotations

import pytest

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.interfaces import Draft

PROMPTS = [[5, 6, 7, 8, 5, 6, 7], [9, 10, 11, 9, 10], [3, 4, 3, 4, 3, 4]]


class Counter:
    """Drafts nothing; logs what it hears."""

    def __init__(self, fail: bool = False) -> None:
        self.asked: list[int] = []
        self.heard: list[int] = []
        self.fail = fail

    def running(self, num_requests: int) -> None:
        self.heard.append(num_requests)
        if self.fail:
            raise RuntimeError("running broke")

    def propose(self, requests):
        self.asked.append(len(requests))
        return [Draft([]) for _ in requests]

    def commit(self, request_id: str, num_tokens: int) -> None:
        pass

    def remove(self, request_id: str) -> None:
        pass


def generate(folder, proposer, penalties, async_scheduling: bool):
    spec = None if proposer is None else {"proposer": proposer, "num_speculative_tokens": 2}
    llm = LLM(str(folder), max_model_len=64, block_size=4, kv_cache_memory=16 << 20, deterministic=True,
              speculative_config=spec, async_scheduling=async_scheduling)
    params = [SamplingParams(temperature=0, max_tokens=12, ignore_eos=True, repetition_penalty=p) for p in penalties]
    return llm.generate([{"prompt_token_ids": p} for p in PROMPTS], params)


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_running_is_told_only_when_some_running_requests_are_not_asked(tiny_checkpoint, async_scheduling) -> None:
    folder = tiny_checkpoint("qwen3")
    whole = Counter()
    generate(folder, whole, [1.0, 1.0, 1.0], async_scheduling)
    assert whole.asked and whole.heard == []        # every running request asked: nothing told
    mixed = Counter()
    outs = generate(folder, mixed, [1.0, 1.2, 1.0], async_scheduling)   # the penalty: never asked
    assert all(o.error is None for o in outs)
    assert mixed.heard and len(mixed.heard) == sum(n < 3 for n in mixed.asked) == len(mixed.asked)
    assert set(mixed.asked) == {2} and set(mixed.heard) == {3}


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_a_raising_running_fails_the_asked_requests_only(tiny_checkpoint, async_scheduling) -> None:
    folder = tiny_checkpoint("qwen3")
    plain = generate(folder, None, [1.0, 1.2, 1.0], async_scheduling)
    outs = generate(folder, Counter(fail=True), [1.0, 1.2, 1.0], async_scheduling)
    assert outs[1].error is None and outs[1].outputs[0].token_ids == plain[1].outputs[0].token_ids
    for out in (outs[0], outs[2]):
        assert out.error is not None and "speculative_config.proposer" in out.error and "running broke" in out.error


class Idler(Counter):
    """Never paused (`idle_rounds` 0); logs `idle_round`."""

    def __init__(self) -> None:
        super().__init__()
        self.idle: list[int] = []

    def idle_rounds(self) -> int:
        return 0

    def idle_round(self, num_requests: int) -> None:
        self.idle.append(num_requests)


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_a_round_with_no_request_to_ask_is_an_idle_round(tiny_checkpoint, async_scheduling) -> None:
    """No running request may be drafted for (penalties): the proposer hears `idle_round` with the
    number running, never `propose` (it then knows the round passed, e.g. a due round of its own
    that found nothing to ask)."""
    folder = tiny_checkpoint("qwen3")
    idler = Idler()
    outs = generate(folder, idler, [1.2, 1.2, 1.2], async_scheduling)
    assert all(o.error is None for o in outs)
    assert idler.asked == [] and idler.idle and set(idler.idle) == {3}
    eligible = Idler()
    generate(folder, eligible, [1.0, 1.0, 1.0], async_scheduling)
    assert eligible.asked and len(eligible.idle) <= 2   # (the last step: no room left)
