# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Structured output through the engine on a tiny random Llama (byte-level vocabulary).

Outputs are checked by tools we did not write: Python's `re.fullmatch` for regexes and
`jsonschema` for schemas. Covers continuous batching, n=4, seeded sampling, preemption by
recompute (same outputs as without), stop strings, min_tokens, and bad specs and compile
timeouts that fail alone.
"""

from __future__ import annotations

import json
import re
import threading
import time

import pytest

pytest.importorskip("llguidance")
jsonschema = pytest.importorskip("jsonschema")

from deepinfer_core import LLM, SamplingParams, StructuredOutputs  # noqa: E402

MAX_LEN = 96
PROMPTS = ["Hello", "The quick brown fox", "1 2 3", "{", "Once upon a time", "abc"]
# Every language below is finite or length-bounded, so a random model reaches EOS in time.
REGEXES = [r"[a-z]{3,8}@[a-z]{2,5}\.(com|org)", r"(yes|no|maybe)!?", r"-?[1-9][0-9]{0,3}(\.[0-9]{1,2})?"]
CHOICES = ["red", "green", "blue sky"]
SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 0, "maximum": 999},
        "ok": {"type": "boolean"},
        "tag": {"enum": ["a", "bb", None]},
        "name": {"type": "string", "pattern": "^[a-z]{1,5}$"},
        "xs": {"type": "array", "items": {"type": "integer", "minimum": -9, "maximum": 9},
               "minItems": 1, "maxItems": 3},
    },
    "required": ["id", "ok", "tag", "name", "xs"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def folder(tiny_checkpoint):
    return tiny_checkpoint("llama")


@pytest.fixture(scope="module")
def llm(folder) -> LLM:
    return LLM(str(folder), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=8 << 20, seed=3)


def specs() -> list[dict]:
    return ([{"regex": r} for r in REGEXES] + [{"choice": CHOICES}, {"json_schema": SCHEMA},
                                               {"json_schema": json.dumps(SCHEMA)}])


def check(spec: dict, text: str) -> None:
    if "regex" in spec:
        assert re.fullmatch(spec["regex"], text), (spec, text)
    elif "choice" in spec:
        assert text in spec["choice"]
    else:
        jsonschema.validate(json.loads(text), SCHEMA)


def run(llm: LLM, temperature: float, seed: int | None = None, **kw) -> list:
    items = [(p, s) for p in PROMPTS for s in specs()]
    params = [SamplingParams(temperature=temperature, seed=None if seed is None else seed + i, max_tokens=64,
                             structured_outputs=s, **kw) for i, (_, s) in enumerate(items)]
    outs = llm.generate([p for p, _ in items], params)
    for (_, spec), out in zip(items, outs):
        assert out.error is None
        for c in out.outputs:
            assert c.finish_reason == "stop" and c.stop_reason is None  # EOS, after a complete match
            check(spec, c.text)
    return outs


def test_greedy_and_sampled_outputs_match_their_specs(llm: LLM) -> None:
    greedy = run(llm, 0.0)
    sampled = run(llm, 1.0, seed=11)
    assert len({o.outputs[0].text for o in sampled}) > len(specs())  # sampling explores the languages
    again = run(llm, 1.0, seed=11)
    assert [o.outputs[0].token_ids for o in again] == [o.outputs[0].token_ids for o in sampled]
    assert [o.outputs[0].text for o in greedy] != [o.outputs[0].text for o in sampled]
    assert not llm.engine.structured._states and not llm.engine.structured._pending


def test_n4_children_have_independent_matchers(llm: LLM) -> None:
    spec = {"json_schema": SCHEMA}
    [four] = llm.generate(["Hello"], SamplingParams(n=4, temperature=1.0, seed=5, max_tokens=64,
                                                    structured_outputs=spec))
    [one] = llm.generate(["Hello"], SamplingParams(temperature=1.0, seed=5, max_tokens=64, structured_outputs=spec))
    assert len(four.outputs) == 4
    for c in four.outputs:
        check(spec, c.text)
    assert len({c.text for c in four.outputs}) > 1
    assert four.outputs[0].token_ids == one.outputs[0].token_ids  # a shared matcher would diverge


def test_preemption_gives_the_same_outputs(folder, llm: LLM) -> None:
    expected = run(llm, 1.0, seed=21)
    per_block = llm.engine.runner.kv_bytes_per_block()
    # 30 blocks of 4 tokens hold one 96-token sequence but not 36 growing ones.
    crowded = LLM(str(folder), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=30 * per_block,
                  max_num_batched_tokens=16, seed=3)
    got = run(crowded, 1.0, seed=21)
    assert crowded.engine.num_preemptions > 0
    assert [o.outputs[0].token_ids for o in got] == [o.outputs[0].token_ids for o in expected]


def test_bad_specs_fail_alone_and_single_prompts_raise(llm: LLM) -> None:
    bad = [({"json_schema": {"type": "array", "uniqueItems": True}}, r"json_schema.*uniqueItems"),
           ({"regex": "(ab"}, r"^regex: "),
           ({"grammar": "start: missing_rule"}, r"^grammar: "),
           ({"grammar": "root ::= [unclosed"}, r"^grammar: ")]
    good = {"regex": REGEXES[0]}
    items = [good] + [s for s, _ in bad] + [good]
    outs = llm.generate(["Hello"] * len(items),
                        [SamplingParams(temperature=0, max_tokens=64, structured_outputs=s) for s in items])
    check(good, outs[0].outputs[0].text)
    check(good, outs[-1].outputs[0].text)
    for out, (_, pattern) in zip(outs[1:-1], bad):
        assert out.outputs[0].finish_reason == "error" and re.search(pattern, out.error), out.error
    for spec, pattern in bad:
        with pytest.raises(ValueError, match=pattern):
            llm.generate("Hello", SamplingParams(max_tokens=4, structured_outputs=spec))
    with pytest.raises(ValueError, match="structured_outputs.regex"):
        SamplingParams(structured_outputs={"regex": 5})
    for (spec, _), out in zip(bad, outs[1:-1]):   # `check`, without the model: the engine's own error
        with pytest.raises(ValueError) as exc:
            StructuredOutputs.from_value(spec).check()
        assert str(exc.value) == out.error, (str(exc.value), out.error)
    for spec in specs() + [{"json_object": True}, {"grammar": 'root ::= "a" | "b"'}]:
        StructuredOutputs.from_value(spec).check()   # accepted specs pass
    odd = {"json_schema": {"type": "object", "default": b"x"}}   # a value JSON cannot encode: named at once
    with pytest.raises(ValueError, match=r"^structured_outputs\.json_schema is not JSON-encodable: TypeError"):
        SamplingParams(max_tokens=4, structured_outputs=odd)


def test_compile_timeout_fails_alone(llm: LLM, monkeypatch) -> None:
    manager = llm.engine.structured
    real_compile = manager.backend.compile

    def slow_compile(spec):
        if spec.kind == "regex" and spec.regex == "slow[0-9]":
            time.sleep(1.5)
        return real_compile(spec)

    monkeypatch.setattr(manager.backend, "compile", slow_compile)
    monkeypatch.setattr(manager, "timeout_s", 0.2)
    good = {"choice": CHOICES}
    outs = llm.generate(["Hi", "Hi", "Hi"], [SamplingParams(temperature=0, max_tokens=16, structured_outputs=s)
                                            for s in (good, {"regex": "slow[0-9]"}, good)])
    assert outs[0].error is None and outs[2].error is None
    check(good, outs[0].outputs[0].text)
    assert re.match(r"regex: grammar compilation did not finish within 0.2 s", outs[1].error), outs[1].error


def test_stop_strings_and_min_tokens(llm: LLM) -> None:
    [stopped, short] = llm.generate(["Hello", "Hello"], [
        SamplingParams(temperature=1.0, seed=1, max_tokens=32, stop="b", structured_outputs={"regex": "[ab]{12}"}),
        SamplingParams(temperature=0, max_tokens=8, min_tokens=5, structured_outputs={"choice": ["a"]}),
    ])
    text = stopped.outputs[0].text
    assert stopped.outputs[0].stop_reason == "b" and re.fullmatch("a*", text) and len(text) < 12
    assert short.outputs[0].text == "a" and short.outputs[0].finish_reason == "stop"  # the grammar wins
    assert not llm.engine.structured._states


def test_asynchronous_steps_keep_structured_ids_on_the_device(folder, llm: LLM, monkeypatch) -> None:
    """Grammar rows are sampled on the device like plain rows (no host sync in the step; the
    grammars consume the ids when the next step resolves them), with the synchronous engine's
    outputs."""
    sync = LLM(str(folder), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=8 << 20, seed=3,
               async_scheduling=False)
    expected = run(sync, 1.0, seed=31)

    def no_host_sampling(*args, **kwargs):
        raise AssertionError("the synchronous sampler ran for rows without penalties or logprobs")

    monkeypatch.setattr(type(llm.engine.sampler), "__call__", lambda self, *a, **k: no_host_sampling())
    before = llm.engine.num_overlapped_steps
    got = run(llm, 1.0, seed=31)
    assert [o.outputs[0].token_ids for o in got] == [o.outputs[0].token_ids for o in expected]
    assert llm.engine.num_overlapped_steps - before > 20


def test_asynchronous_steps_consume_tokens_in_the_mask_thread(folder, llm: LLM, monkeypatch) -> None:
    """Only tokens that end a request are consumed on the engine thread; the others are
    consumed by the mask thread just before it fills the next masks (outputs unchanged)."""
    sync = LLM(str(folder), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=8 << 20, seed=3,
               async_scheduling=False)
    expected = run(sync, 1.0, seed=41)
    manager = llm.engine.structured
    threads: list[str] = []
    original = manager.accept_step

    def recording(sampled):
        threads.extend(threading.current_thread().name for _ in sampled)
        return original(sampled)

    monkeypatch.setattr(manager, "accept_step", recording)
    got = run(llm, 1.0, seed=41)
    assert [o.outputs[0].token_ids for o in got] == [o.outputs[0].token_ids for o in expected]
    in_mask_thread = sum(name.startswith("deepinfer-mask") for name in threads)
    assert in_mask_thread > 3 * (len(threads) - in_mask_thread), threads


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_a_rejected_last_token_fails_its_request_in_both_loops(folder, async_scheduling: bool) -> None:
    """The byte-level tokenizer lets a mask allow a special token that the matcher then rejects;
    when that token also ends the request (EOS, or max_tokens=1), the request must still fail with
    the grammar's error (the asynchronous loop once released the grammar before consuming)."""
    llm = LLM(str(folder), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=8 << 20,
              async_scheduling=async_scheduling)
    for spec, max_tokens in (({"choice": ["<|im_start|>x"]}, 1), ({"choice": ["<|im_end|>"]}, 20),
                             ({"choice": ["<|im_start|>x"]}, 20)):  # rejected mid-stream (mask thread)
        out, other = llm.generate(["hi", "other"], [
            SamplingParams(temperature=1.0, seed=1, max_tokens=max_tokens, structured_outputs=spec),
            SamplingParams(max_tokens=2)])
        assert out.error is not None and out.error.startswith("choice: the grammar rejected"), out.error
        assert other.error is None and len(other.outputs[0].token_ids) == 2


@pytest.mark.parametrize("regex", [r"[^\s\S]", r"x[^\s\S]", r"[a&&b]"])
def test_a_regex_matching_nothing_fails_alone(llm: LLM, regex: str) -> None:
    bad, good = llm.generate(["hi", "hi"], [SamplingParams(max_tokens=5, structured_outputs={"regex": regex}),
                                            SamplingParams(max_tokens=3)])
    assert bad.error is not None and bad.error.startswith("regex: cannot compile") and "empty" in bad.error
    assert good.error is None and len(good.outputs[0].token_ids) == 3


@pytest.mark.parametrize("extra", [{"ignore_eos": True}, {"min_tokens": 3}])
def test_a_complete_grammar_stops_at_eos_despite_ignore_eos_and_min_tokens(llm: LLM, extra: dict) -> None:
    """Once the grammar is complete only EOS is legal: the request stops there (before this, it
    emitted EOS again and again until max_tokens or min_tokens)."""
    for spec, text in (({"regex": "a{0}"}, ""), ({"choice": ["yes"]}, "yes")):
        [out] = llm.generate(["hi"], SamplingParams(temperature=1.0, seed=2, max_tokens=20, structured_outputs=spec,
                                                    **extra))
        done = out.outputs[0]
        assert out.error is None and done.text == text and done.finish_reason == "stop"
        assert done.token_ids.count(llm.engine.eos_token_id) == 1 and done.token_ids[-1] == llm.engine.eos_token_id


def test_switch_interval_is_lowered_only_while_structured_requests_run(llm: LLM) -> None:
    """The mask thread needs the GIL between llguidance calls: the interpreter's switch interval
    drops while grammars are live and comes back to the caller's value afterwards."""
    import sys

    from deepinfer_core.structured.switch_interval import FILL_SWITCH_INTERVAL_S

    before = sys.getswitchinterval()
    assert before > FILL_SWITCH_INTERVAL_S
    core = llm.engine
    core.add_request("grammar", [5, 6, 7], SamplingParams(temperature=1.0, seed=4, max_tokens=6,
                                                           structured_outputs={"regex": "[a-z]{6}"}))
    seen = []
    while core.has_unfinished():
        core.step()
        seen.append(sys.getswitchinterval())
    assert any(abs(value - FILL_SWITCH_INTERVAL_S) < 1e-9 for value in seen), seen   # stored as microseconds
    assert sys.getswitchinterval() == before


def test_switch_interval_survives_overlapping_engines_and_dropped_managers(folder, llm: LLM) -> None:
    """Two engines whose structured requests overlap restore the caller's interval only when the
    last one ends; an engine closed, or dropped and collected, while holding it lets go."""
    import gc
    import sys

    from deepinfer_core.structured.switch_interval import FILL_SWITCH_INTERVAL_S

    before = sys.getswitchinterval()
    other = LLM(str(folder), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=8 << 20, seed=5)
    grammar = SamplingParams(temperature=1.0, seed=4, max_tokens=6, structured_outputs={"regex": "[a-z]{6}"})
    a, b = llm.engine, other.engine
    a.add_request("a", [5, 6, 7], grammar)
    b.add_request("b", [5, 6, 8], grammar)
    while a.has_unfinished() or b.has_unfinished():
        for core in (a, b):
            if core.has_unfinished():
                core.step()
        if a.has_unfinished() != b.has_unfinished():     # one engine done, the other still running
            assert abs(sys.getswitchinterval() - FILL_SWITCH_INTERVAL_S) < 1e-9
    assert sys.getswitchinterval() == before
    for close in (True, False):   # LLM.close(), or the garbage collector once the fill has ended
        engine = LLM(str(folder), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=8 << 20, seed=5)
        engine.engine.add_request("c", [5, 6, 9], grammar)
        while not engine.engine.structured.state("c"):
            engine.engine.step()
        assert abs(sys.getswitchinterval() - FILL_SWITCH_INTERVAL_S) < 1e-9
        if close:
            engine.close()
        else:
            job = engine.engine.structured._job
            if job is not None:
                job.future.exception()   # a running fill holds the manager
            del engine, job
            gc.collect()
        assert sys.getswitchinterval() == before


def _drive(core, requests) -> dict[str, tuple[list[int], str | None, str | None]]:
    """Runs requests on an engine core; per request: tokens, finish reason, error (and checks
    that nothing follows a request's finish)."""
    for request_id, prompt, params in requests:
        core.add_request(request_id, prompt, params)
    tokens, finish, errors = {}, {}, {}
    while core.has_unfinished():
        for out in core.step():
            assert out.request_id not in finish, f"output after the finish of {out.request_id}"
            tokens.setdefault(out.request_id, []).extend(out.new_token_ids)
            errors[out.request_id] = out.error or errors.get(out.request_id)
            if out.finish_reason is not None:
                finish[out.request_id] = out.finish_reason
    return {rid: (tokens.get(rid, []), finish.get(rid), errors.get(rid)) for rid, _, _ in requests}


def test_a_stopped_synchronous_row_leaves_the_grammar_rows_masked(folder) -> None:
    """A logprobs row (sampled by the synchronous sampler) stops on its first token; the grammar
    row that shares the next step must still be masked (it was drawn unmasked once, found by an
    adversarial review): same outputs as the synchronous loop, every seed."""
    spec = {"regex": "(ab|cd)+x"}
    results = {}
    for async_scheduling in (False, True):
        core = LLM(str(folder), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=8 << 20, seed=3,
                   deterministic=True, async_scheduling=async_scheduling).engine
        core.compile_structured(SamplingParams(structured_outputs=spec))   # admitted at the first step
        results[async_scheduling] = [_drive(core, [
            (f"stop{seed}", [5, 6], SamplingParams(max_tokens=5, temperature=0, logprobs=1,
                                                   stop_token_ids=list(range(258)))),
            (f"g{seed}", [7, 8, 9 + seed], SamplingParams(max_tokens=12, temperature=1.0, seed=seed,
                                                          structured_outputs=spec))]) for seed in range(4)]
    assert results[True] == results[False]
    assert all(r[f"g{seed}"][2] is None for seed, r in enumerate(results[True]))


@pytest.mark.parametrize("max_tokens", [2, 3, 20])
def test_a_rejection_found_by_the_mask_thread_reports_like_the_synchronous_loop(folder, max_tokens: int) -> None:
    """A first token the grammar rejects, found by the mask thread (with max_tokens=2 the last
    token is already scheduled then): the request ends with the error in the same output as the
    rejected token, and nothing after it, exactly as in the synchronous loop (the asynchronous
    loop once reported the rejected token a step early, and with max_tokens=2 one more token)."""
    params = SamplingParams(max_tokens=max_tokens, temperature=1.0, seed=0,
                            structured_outputs={"choice": ["<|im_start|>x"]})
    other = SamplingParams(max_tokens=6, temperature=1.0, seed=1, structured_outputs={"regex": "[a-z]{6}"})
    runs = {}
    for async_scheduling in (False, True):
        llm = LLM(str(folder), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=8 << 20,
                  async_scheduling=async_scheduling)
        runs[async_scheduling] = _drive(llm.engine, [("s", [5, 6], params), ("t", [5, 7], other)])
        outs = llm.generate(["hi", "there"], [params, other])
        runs[async_scheduling]["generate"] = [(o.error, [c.token_ids for c in o.outputs]) for o in outs]
    assert runs[True] == runs[False]
    tokens, finish, error = runs[True]["s"]
    assert finish == "error" and error.startswith("choice: the grammar rejected") and "\n" not in error
    assert runs[True]["t"][2] is None


def test_aborting_the_only_structured_request_frees_its_template_slot(llm: LLM, monkeypatch) -> None:
    """A grammar released while the mask thread fills is freed when that fill ends, even when no
    other structured request comes to reap it (it was held until the next one)."""
    core = llm.engine
    original = core.structured._run_job

    def slow_job(*args):
        time.sleep(0.2)                                   # the abort below lands while it runs
        return original(*args)

    monkeypatch.setattr(core.structured, "_run_job", slow_job)
    core.add_request("lone", [5, 6, 7], SamplingParams(temperature=1.0, seed=4, max_tokens=20,
                                                       structured_outputs={"regex": "[a-z]{20}"}))
    while core.structured.state("lone") is None or core.structured.state("lone").num_tokens < 2:
        core.step()
    grammar = core.structured.state("lone").grammar
    assert sum(grammar._live) == 1
    assert core.structured._job is not None and not core.structured._job.done()
    assert core.abort("lone")
    assert sum(grammar._live) == 1                        # the running fill may still use it
    while core.has_unfinished():
        core.step()
    if core.structured._job is not None:
        core.structured._job.future.exception()          # waits for the fill to end
    deadline = time.monotonic() + 5
    while sum(grammar._live) and time.monotonic() < deadline:   # the done callback runs in the mask thread
        time.sleep(0.01)
    assert sum(grammar._live) == 0
