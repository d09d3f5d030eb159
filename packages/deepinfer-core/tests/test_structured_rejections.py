# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""When a grammar rejects a token its own mask allowed (an llguidance edge case with special
tokens of byte-level vocabularies), both engine loops report the same thing: the valid tokens
before it, then the error; never the rejected token. Cases found by adversarial reviews of the
asynchronous loop, where the mask thread consumes tokens one step late and a synchronous sampler
row (penalties, logprobs) can join any step.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("llguidance")

from deepinfer_core import LLM, SamplingParams  # noqa: E402

MAX_LEN = 96
CASES = [
    dict(max_tokens=2, structured_outputs={"choice": ["a<|im_start|>"]}),             # rejection ends it by length
    dict(max_tokens=3, structured_outputs={"choice": ["ab<|im_start|>x"]}),
    dict(max_tokens=20, stop_token_ids=[257], structured_outputs={"choice": ["ab<|im_start|>x"]}),
    dict(max_tokens=20, stop=["b"], structured_outputs={"choice": ["ab<|im_start|>x"]}),   # a stop string first
    dict(max_tokens=20, structured_outputs={"choice": ["<|im_end|>"]}),                 # a rejected EOS
    dict(max_tokens=20, logprobs=1, structured_outputs={"choice": ["ab<|endoftext|>"]}),  # synchronous sampler
]


def build(folder, async_scheduling: bool) -> LLM:
    return LLM(str(folder), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=8 << 20, seed=3,
               deterministic=True, async_scheduling=async_scheduling)


def summary(outs) -> list:
    return [(o.error.split(":")[0] if o.error else None,
             [(c.token_ids, c.text, c.finish_reason, c.stop_reason) for c in o.outputs]) for o in outs]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("with_penalty_row", [False, True])
def test_both_loops_report_a_rejection_alike(tiny_checkpoint, case: int, with_penalty_row: bool) -> None:
    folder = tiny_checkpoint("llama")
    params = [SamplingParams(temperature=1.0, seed=0, **CASES[case])]
    prompts = ["Hi"]
    if with_penalty_row:   # forces the synchronous sampler for the steps it shares
        params.append(SamplingParams(temperature=0, max_tokens=4, repetition_penalty=1.3))
        prompts.append("Hello")
    results = {a: summary(build(folder, a).generate(prompts, params)) for a in (False, True)}
    assert results[True] == results[False]
    error, [(tokens, _, finish, _)] = results[True][0]
    if "stop" in CASES[case]:
        assert error is None and finish == "stop"      # the stop string came before the rejection
    else:
        assert error == "choice" and finish == "error"
        assert 257 not in tokens and 258 not in tokens     # the rejected special token is never reported


def test_abort_after_a_length_limit_with_the_last_token_in_flight(tiny_checkpoint) -> None:
    """A request a length limit ended while its last token is still in flight can be aborted:
    abort() says so, and that token (drawn after its grammar was released) is never reported."""
    llm = build(tiny_checkpoint("llama"), True)
    core = llm.engine
    original = core.structured._fill

    def slow_fill(*args):
        time.sleep(0.05)                  # the mask thread lags, as on a loaded host
        return original(*args)

    core.structured._fill = slow_fill
    core.add_request("v", [5, 6, 7], SamplingParams(max_tokens=2, temperature=0, structured_outputs={"choice": ["abz"]}))
    core.add_request("o", [8, 9], SamplingParams(max_tokens=6, temperature=0, ignore_eos=True))
    aborted, after = None, []
    while core.has_unfinished():
        outs = core.step()
        if aborted:
            after += [o for o in outs if o.request_id == "v"]
        pending = getattr(core._deferred, "requests", [])
        if aborted is None and any(r.request_id == "v" and r.is_finished for r in pending):
            aborted = core.abort("v")
    assert aborted is True and after == []


def test_a_failed_launch_leaves_no_fill_running(tiny_checkpoint) -> None:
    """The mask thread's job starts before the launch; when the launch raises, the step waits for
    that job before re-raising, so a caller that keeps stepping never touches a matcher the job
    still holds (llguidance then raised 'Already mutably borrowed' from every later step)."""
    core = build(tiny_checkpoint("llama"), True).engine
    original = core.structured._fill

    def slow_fill(*args):
        time.sleep(0.05)                  # the job outlives the failed launch
        return original(*args)

    core.structured._fill = slow_fill
    launch, launches = core.runner.execute_model, []

    def flaky(*args, **kwargs):
        launches.append(1)
        if len(launches) == 4:
            raise RuntimeError("injected launch failure")
        return launch(*args, **kwargs)

    core.runner.execute_model = flaky
    core.add_request("a", [5, 6], SamplingParams(max_tokens=12, temperature=1.0, seed=1,
                                                 structured_outputs={"regex": "[a-z]{8,12}"}))
    core.add_request("b", [7], SamplingParams(max_tokens=10, temperature=1.0, seed=2,
                                              structured_outputs={"choice": ["abcdefg", "abcdxyz"]}))
    errors = []
    for _ in range(200):
        if not core.has_unfinished():
            break
        try:
            core.step()
        except RuntimeError as exc:
            errors.append(str(exc))
    assert errors == ["injected launch failure"]
    assert not core.has_unfinished()
