# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/step_phases.StepPhases` (`bench_dspark.py --step-log-phases`): each phase gets its
calls' exclusive time (nested calls and collector passes taken out), on a fake engine with a fake
clock, and on a real speculative engine every logged step's phases fit inside its `ms`."""

from __future__ import annotations

import gc
from pathlib import Path
from types import SimpleNamespace

from deepinfer_core import SamplingParams


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _fake_engine(clock: _Clock):
    """An engine whose calls advance `clock` by known amounts: `_resolve` 2 ms of its own around a
    5 ms wait on the event `_to_host` returned, `execute_model` 3 ms, `schedule` 1 ms."""
    def advance(ms):
        clock.now += ms / 1e3

    event = SimpleNamespace(synchronize=lambda: advance(5.0), query=lambda: True)
    engine = SimpleNamespace(scheduler=SimpleNamespace(schedule=lambda: advance(1.0),
                                                       update_from_output=lambda *a: advance(0.25)),
                             runner=SimpleNamespace(execute_model=lambda *a, **k: advance(3.0)),
                             speculative=None)

    def resolve(step):
        advance(1.0)
        step[1].synchronize()
        advance(1.0)
    engine._resolve = resolve
    engine._sample = lambda *a: advance(0.5)
    engine._to_host = lambda ids: (ids, event)
    return engine


def test_phases_are_exclusive(benchmark_script, monkeypatch) -> None:
    phases_mod = benchmark_script("step_phases")
    clock = _Clock()
    monkeypatch.setattr(phases_mod.time, "perf_counter", clock)
    engine = _fake_engine(clock)
    phases = phases_mod.StepPhases(engine)
    try:
        engine.scheduler.schedule()
        engine.runner.execute_model([], features=False)
        step = engine._to_host("ids")
        assert step[1].query() is True   # the timed event passes other calls through
        engine._resolve(step)
        engine._sample()
        engine.scheduler.update_from_output()
        got = phases.take()
        assert got == {"schedule": 1.0, "launch": 3.0, "wait": 5.0, "resolve": 2.0, "sample": 0.5, "update": 0.25}
        assert phases.take() == {}   # zeroed by the read
        # a collector pass inside a call is the collector's, not the call's
        def collecting():
            phases._on_gc("start", {"generation": 0})
            clock.now += 0.004
            phases._on_gc("stop", {"generation": 0})
            clock.now += 0.003
        owner = SimpleNamespace(forward=collecting)
        phases._wrap(owner, "forward", "launch")
        owner.forward()
        assert phases.take() == {"launch": 3.0, "gc": 4.0}
        # a call that raises still ends its span: the caller's phase goes on as before
        def failing():
            clock.now += 0.002
            raise RuntimeError("boom")
        owner = SimpleNamespace(fail=failing, outer=None)
        phases._wrap(owner, "fail", "spec")

        def outer():
            clock.now += 0.001
            try:
                owner.fail()
            except RuntimeError:
                pass
            clock.now += 0.001
        owner.outer = outer
        phases._wrap(owner, "outer", "schedule")
        owner.outer()
        assert phases.take() == {"schedule": 2.0, "spec": 2.0} and phases._stack == []
        # another thread's calls (the mask thread waiting on the ids' event) are not timed
        import threading
        worker = threading.Thread(target=lambda: step[1].synchronize())
        worker.start()
        worker.join()
        assert phases.take() == {} and phases._stack == []
    finally:
        phases.close()
    assert phases._on_gc not in gc.callbacks


def test_logged_steps_carry_their_phases(benchmark_script, monkeypatch, folders, kit) -> None:
    """A speculative engine's logged steps: `phases` in every row (with `phases`), the exclusive
    times summing to at most the step's `ms`, the hooks timed as `spec`, a forced collection inside
    a step timed as `gc`; without `phases` no row has them."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    probes = benchmark_script("engine_probes")
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 3}
    llm = kit.build(target, spec)
    log: list[dict] = []
    trace = probes.StepTimes(llm, log, phases=True)
    schedule = llm.engine.scheduler.schedule   # (StepTimes's wrapper, around the phase wrapper: the pass
    # below runs inside the step, outside every phase, and is still the collector's)
    collected = []

    def scheduling():
        if len(collected) < 1:
            collected.append(gc.collect())
        return schedule()
    llm.engine.scheduler.schedule = scheduling
    try:
        llm.generate([{"prompt_token_ids": p} for p in kit.prompts(3, seed=2)],
                     SamplingParams(temperature=0, max_tokens=12, ignore_eos=True))
    finally:
        trace.phases.close()
    assert log and all("phases" in row for row in log)
    assert all(sum(row["phases"].values()) <= row["ms"] + 0.01 for row in log)
    running = [row for row in log if row["running"]]
    assert all(row["phases"].get("launch", 0) > 0 and row["phases"].get("spec", 0) > 0 for row in running)
    assert sum(row["phases"].get("gc", 0) > 0 for row in log) >= 1
    plain = kit.build(target, None)
    plain_log: list[dict] = []
    probes.StepTimes(plain, plain_log)
    plain.generate([{"prompt_token_ids": p} for p in kit.prompts(2, seed=3)],
                   SamplingParams(temperature=0, max_tokens=4, ignore_eos=True))
    assert plain_log and not any("phases" in row for row in plain_log)


def test_the_flag_needs_a_step_log(benchmark_script, monkeypatch, capsys) -> None:
    import sys

    import pytest

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    monkeypatch.setattr(sys, "argv", ["bench_dspark.py", "--target", "t", "--drafter", "d", "--step-log-phases"])
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2 and "--step-log-phases: need --step-log" in capsys.readouterr().err
