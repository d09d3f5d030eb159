# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/lockstep.py`: engines serving at once, one step at a time in turn, each timed over its
own turns only; `paired_calls.paired_rows(lockstep=True)` (`bench_dspark.py --lockstep`)."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest


@pytest.fixture
def lockstep(benchmark_script, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    return benchmark_script("lockstep")


def test_the_baton_turns_in_order_and_skips_engines_that_ended(lockstep) -> None:
    baton = lockstep.Baton(["a", "b", "c"])
    turns = []

    def seen(name):
        baton.wait(name)   # (returns at once only when it is `name`'s turn)
        turns.append(name)
    seen("a")
    baton.pass_on("a")
    seen("b")
    baton.pass_on("b", ended=True)
    seen("c")
    baton.pass_on("c")
    seen("a")
    baton.pass_on("a")
    seen("c")   # b ended: c follows a
    baton.pass_on("c", ended=True)
    seen("a")
    baton.pass_on("a")
    seen("a")   # the last one running keeps the turn
    assert turns == ["a", "b", "c", "a", "c", "a", "a"]
    for bad in ([], ["a", "a"]):
        with pytest.raises(ValueError, match="names"):
            lockstep.Baton(bad)


def _generate(batch, params):
    return lambda llm, hook: llm.generate([{"prompt_token_ids": p} for p in batch], params, on_progress=hook)


def test_engines_step_in_turn_and_reply_as_alone(lockstep, folders, kit) -> None:
    from deepinfer_core import SamplingParams

    target, _ = folders
    llms = {"a": kit.build(target), "b": kit.build(target, max_num_seqs=2)}   # b: half the batch a step
    batch = kit.prompts(4, seed=7)
    alone = {name: kit.greedy(llm, batch) for name, llm in llms.items()}
    order, threads = [], set()
    for name, llm in llms.items():
        step = llm.engine.step

        def logged(step=step, name=name):
            order.append(name)
            threads.add(threading.current_thread().name)
            return step()
        llm.engine.step = logged
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    start = time.perf_counter()
    done = lockstep.lockstep_calls(llms, _generate(batch, params))
    wall = time.perf_counter() - start
    assert {name: [o.outputs[0].token_ids for o in outs] for name, (outs, _) in done.items()} == alone
    a, b = order.count("a"), order.count("b")
    assert b > a   # b runs its 4 requests 2 at a time: more steps
    # strictly alternating while both run, then b alone
    assert order[:2 * a] == ["a", "b"] * a and order[2 * a:] == ["b"] * (b - a)
    assert threads == {"lockstep-a", "lockstep-b"}   # each call in its own thread
    spent = {name: seconds for name, (_, seconds) in done.items()}
    assert all(s > 0 for s in spent.values()) and sum(spent.values()) <= wall


def test_each_call_is_timed_over_its_own_turns(lockstep) -> None:
    """A fake clock that only the engines' own work moves: each call's seconds are its submission
    (before the first hook), its steps and its end (after the last hook), never another's."""
    now = [0.0]

    class Fake:
        def __init__(self, steps: int, seconds: float, submit: float, end: float) -> None:
            self.steps, self.seconds, self.submit, self.end = steps, seconds, submit, end

        def serve(self, hook):
            now[0] += self.submit   # tokenizing, adding the requests
            hook(0, 1, 0)   # as `LLM.generate`: once before the first step
            for _ in range(self.steps):
                now[0] += self.seconds   # this engine's step
                hook(0, 1, 1)
            now[0] += self.end   # the call's end: outputs built, nothing left to abort
            return ["out"]
    llms = {"slow": Fake(3, 2.0, 100.0, 1000.0), "fast": Fake(5, 0.5, 10.0, 10000.0)}
    done = lockstep.lockstep_calls(llms, lambda llm, hook: llm.serve(hook), clock=lambda: now[0])
    assert done == {"slow": (["out"], 1106.0), "fast": (["out"], 10012.5)}


def test_an_interrupt_in_the_callers_thread_ends_every_call_then_is_raised(lockstep, monkeypatch) -> None:
    ended, joins = [], []

    class Interrupted(threading.Thread):
        def join(self, timeout=None):
            joins.append(self.name)
            if len(joins) == 1:   # Ctrl-C while the caller waits, once both calls took turns
                time.sleep(0.05)
                raise KeyboardInterrupt
            return super().join(timeout)
    monkeypatch.setattr(lockstep.threading, "Thread", Interrupted)

    def serve(llm, hook):
        try:
            for _ in range(100000):   # far longer than the test: only the cancel ends it
                time.sleep(0.0001)
                hook(0, 1, 1)
        except lockstep.Cancelled:
            ended.append(llm)
            raise
        return llm
    with pytest.raises(KeyboardInterrupt):
        lockstep.lockstep_calls({"a": "a", "b": "b"}, serve)
    assert sorted(ended) == ["a", "b"]   # both calls ended at their next turn
    assert not [t for t in threading.enumerate() if t.name.startswith("lockstep-")]
    baton = lockstep.Baton(["x"])
    baton.cancel()
    with pytest.raises(lockstep.Cancelled):
        baton.wait("x")   # even on its own turn


def test_a_failing_call_leaves_the_turn_and_raises_after_the_others(lockstep) -> None:
    finished = []

    def serve(llm, hook):
        for step in range(4):
            if llm == "bad" and step == 2:
                raise RuntimeError("engine bad failed")
            hook(0, 1, 1)
        finished.append(llm)
        return llm
    with pytest.raises(RuntimeError, match="engine bad failed"):
        lockstep.lockstep_calls({"good": "good", "bad": "bad", "other": "other"}, serve)
    assert sorted(finished) == ["good", "other"]


def test_paired_rows_in_lockstep_rotate_the_turn_and_take_each_calls_turns(benchmark_script, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    paired = benchmark_script("paired_calls")
    seen = []

    def fake_lockstep(llms, run, context=None):
        seen.append(list(llms))
        assert context == "ctx"   # `lockstep_context`, passed through
        outs = {name: run(llm, None) for name, llm in llms.items()}
        return {name: (outs[name], {"a": 2.0, "b": 1.0}[name]) for name in llms}   # b twice as fast
    monkeypatch.setattr(paired, "lockstep_calls", fake_lockstep)

    class Fake:
        engine = SimpleNamespace(speculative=None)

        def __init__(self, drafts: list[int]) -> None:
            self.drafts = iter(drafts)   # drafted rounds of each call

        def chat(self, prompts, params, on_progress=None):
            metrics = SimpleNamespace(arrival_time=0.0, finished_time=1.0, spec_rounds=next(self.drafts),
                                      spec_verified=0, spec_accepted=0)
            return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1] * 10)], metrics=metrics)]
    rows = paired.paired_rows({"a": Fake([0, 0, 0]), "b": Fake([0, 3, 1])}, ["p"], None, 3, 1,
                              heap=paired.HeapOutside(enabled=False), lockstep=True, lockstep_context="ctx")
    assert seen == [["a", "b"], ["b", "a"], ["a", "b"]]   # the turn's order rotated each round
    a, b = (dict((name, row) for _, name, row in rows)[n] for n in "ab")
    assert b["paired rounds"] == [2.0, 2.0, 2.0] and b["tok/s"] == 10.0
    assert a["lockstep drafted calls"] == 0 and b["lockstep drafted calls"] == 2   # biased against b
    assert math.isnan(a["per-user tok/s"]) and math.isnan(b["per-user tok/s"])   # timestamps span both
    for bad in (dict(cap=2), dict(logs={"a": []}), dict(traces={"a": object()})):
        with pytest.raises(ValueError, match="lockstep"):
            paired.paired_rows({"a": Fake([0])}, ["p"], None, 1, 1, lockstep=True, **bad)


@pytest.mark.parametrize("extra", [[], ["--interleave", "2", "--step-times"],
                                   ["--interleave", "2", "--closed-loop", "2"],
                                   ["--interleave", "2", "--step-log", "steps.jsonl"],
                                   ["--interleave", "2", "--gc-in-calls"]])
def test_bench_lockstep_needs_interleave_without_logs_or_loops(benchmark_script, monkeypatch, capsys, tmp_path,
                                                               extra) -> None:
    import sys

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    monkeypatch.chdir(tmp_path)
    bench = benchmark_script("bench_dspark")
    monkeypatch.setattr(sys, "argv", ["bench_dspark.py", "--target", "t", "--drafter", "d", "--lockstep", *extra])
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2 and "--lockstep" in capsys.readouterr().err


def test_each_call_runs_in_its_engines_context_in_its_own_thread(lockstep) -> None:
    entered = []

    class Context:
        def __init__(self, name: str) -> None:
            self.name = name

        def __enter__(self):
            entered.append((self.name, threading.current_thread().name, "in"))

        def __exit__(self, *exc):
            entered.append((self.name, threading.current_thread().name, "out"))

    def serve(llm, hook):
        hook(0, 1, 0)
        hook(0, 1, 1)
        return llm
    done = lockstep.lockstep_calls({"a": "a", "b": "b"}, serve, context=Context)
    assert {name: outs for name, (outs, _) in done.items()} == {"a": "a", "b": "b"}
    assert sorted(entered) == [("a", "lockstep-a", "in"), ("a", "lockstep-a", "out"),
                               ("b", "lockstep-b", "in"), ("b", "lockstep-b", "out")]


def test_engine_streams_is_none_without_cuda_and_one_stream_per_engine_with_it(lockstep, monkeypatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert lockstep.engine_streams() is None
    made = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "Stream", lambda: made.append(object()) or made[-1])
    monkeypatch.setattr(torch.cuda, "stream", lambda stream: ("on", stream))
    context = lockstep.engine_streams()
    a1, b1, a2 = context("a"), context("b"), context("a")
    assert len(made) == 2 and a1 == a2 == ("on", made[0]) and b1 == ("on", made[1])   # kept per engine


def test_lockstep_streams_needs_lockstep(benchmark_script, monkeypatch, capsys) -> None:
    import sys

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    monkeypatch.setattr(sys, "argv", ["bench_dspark.py", "--target", "t", "--drafter", "d", "--interleave", "2",
                                      "--lockstep-streams"])
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2 and "--lockstep-streams" in capsys.readouterr().err
