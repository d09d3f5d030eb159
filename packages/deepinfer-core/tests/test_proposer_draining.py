# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`Proposer.draining`: `LLM.generate` tells a proposer that has it True once its prompts are
added (no request will be added until it returns) and False when it returns, also when a step
raised; a proposer that raises there changes nothing."""

from __future__ import annotations

import pytest

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.interfaces import Draft

PROMPTS = [[5, 6, 7, 8, 5, 6, 7], [9, 10, 11, 9, 10]]


class Listener:
    """Drafts nothing; logs `draining` and how many requests each `propose` saw then."""

    def __init__(self, fail: bool = False) -> None:
        self.heard: list[bool] = []
        self.tracked = 0
        self.tracked_when_draining: list[int] = []
        self.fail = fail

    def track(self, request_id, token_ids) -> None:
        self.tracked += 1

    def draining(self, flag: bool) -> None:
        self.heard.append(flag)
        if flag:
            self.tracked_when_draining.append(self.tracked)
        if self.fail:
            raise RuntimeError("draining broke")

    def propose(self, requests):
        return [Draft([]) for _ in requests]

    def commit(self, request_id: str, num_tokens: int) -> None:
        pass

    def remove(self, request_id: str) -> None:
        pass


def build(folder, proposer, async_scheduling: bool = True) -> LLM:
    return LLM(str(folder), max_model_len=64, block_size=4, kv_cache_memory=16 << 20, deterministic=True,
               speculative_config={"proposer": proposer, "num_speculative_tokens": 2},
               async_scheduling=async_scheduling)


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_generate_drains_after_adding_its_prompts(tiny_checkpoint, async_scheduling) -> None:
    folder = tiny_checkpoint("qwen3")
    listener = Listener()
    llm = build(folder, listener, async_scheduling)
    params = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
    llm.generate([{"prompt_token_ids": p} for p in PROMPTS], params)
    llm.generate([{"prompt_token_ids": PROMPTS[0]}], params)
    assert listener.heard == [True, False, True, False]
    assert listener.tracked_when_draining == [2, 3]   # every prompt of the call added first


def test_a_raising_draining_changes_no_output(tiny_checkpoint) -> None:
    folder = tiny_checkpoint("qwen3")
    params = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
    prompts = [{"prompt_token_ids": p} for p in PROMPTS]
    quiet, loud = Listener(), Listener(fail=True)
    expected = [o.outputs[0].token_ids for o in build(folder, quiet).generate(prompts, params)]
    outs = build(folder, loud).generate(prompts, params)
    assert [o.error for o in outs] == [None, None] and loud.heard == [True, False]
    assert [o.outputs[0].token_ids for o in outs] == expected


def test_a_step_that_raises_still_ends_the_drain(tiny_checkpoint, monkeypatch) -> None:
    folder = tiny_checkpoint("qwen3")
    listener = Listener()
    llm = build(folder, listener)

    def broken():
        raise KeyboardInterrupt

    monkeypatch.setattr(llm.engine, "step", broken)
    with pytest.raises(KeyboardInterrupt):
        llm.generate([{"prompt_token_ids": PROMPTS[0]}], SamplingParams(max_tokens=4))
    assert listener.heard == [True, False]
