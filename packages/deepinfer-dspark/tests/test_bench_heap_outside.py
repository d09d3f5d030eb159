# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`paired_calls.HeapOutside`: the garbage collector's full passes stay out of the timed calls
(session 55: on an H100 two plain-decoding engines read paired ratios from 0.58 to 1.2 on short
calls; an engine's periodic `gc.collect()` lands on one call in a handful)."""

from __future__ import annotations

import gc
import math
from pathlib import Path
from types import SimpleNamespace

import pytest


@pytest.fixture
def paired(benchmark_script, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    return benchmark_script("paired_calls")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_calls_run_frozen_and_collections_run_between_them(paired, monkeypatch) -> None:
    if not gc.isenabled() or gc.get_freeze_count():
        pytest.skip("the collector is off or the heap is frozen already")
    collected = []
    real = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *a: collected.append(gc.get_freeze_count()) or real(*a))
    clock = Clock()
    heap = paired.HeapOutside(collect_after_s=10.0, clock=clock)
    with heap.call():
        assert gc.get_freeze_count() > 0   # the call runs on a frozen heap
        frozen_in_call = gc.get_freeze_count()
    assert gc.get_freeze_count() == 0 and frozen_in_call > 0
    assert collected == [0] and heap.collections == 1   # the first call: collected before, unfrozen
    clock.now += 9.9
    with heap.call():
        pass
    assert heap.collections == 1   # within 10 s: none
    clock.now += 0.2
    with heap.call():
        pass
    assert heap.collections == 2 and collected == [0, 0]


def test_an_engines_own_frozen_heap_leaves_the_call_alone(paired) -> None:
    """Inside the harness's frozen heap the engine's `FrozenHeap` neither freezes nor collects
    (`gc.get_freeze_count() > 0`): its collection would otherwise run inside the timed call."""
    from deepinfer_core.engine.frozen_heap import FrozenHeap

    if not gc.isenabled() or gc.get_freeze_count():
        pytest.skip("the collector is off or the heap is frozen already")
    engine = FrozenHeap(collect_every=1, collect_after_s=0.0)
    with engine.call() as froze:
        assert froze
    assert engine.collections == 1   # alone: it collects at the end of every call (collect_after_s 0)
    heap = paired.HeapOutside()
    with heap.call(), engine.call() as froze:
        assert not froze
    assert engine.collections == 1 and heap.collections == 1
    off = paired.HeapOutside(enabled=False)
    with off.call(), engine.call() as froze:
        assert froze   # the old harness: the engine's own
    assert engine.collections == 2 and off.collections == 0 and gc.get_freeze_count() == 0


def test_a_raising_call_unfreezes_the_heap(paired) -> None:
    if not gc.isenabled() or gc.get_freeze_count():
        pytest.skip("the collector is off or the heap is frozen already")
    with pytest.raises(RuntimeError), paired.HeapOutside().call():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("bad", [-1.0, float("inf"), float("nan")])
def test_a_bad_interval_is_named(paired, bad) -> None:
    with pytest.raises(ValueError, match="collect_after_s"):
        paired.HeapOutside(collect_after_s=bad)


class _Fake:
    engine = SimpleNamespace(speculative=None)

    def __init__(self, tokens: list[int]) -> None:
        self.tokens, self.calls = tokens, 0

    def chat(self, prompts, params):
        n = self.tokens[self.calls]
        self.calls += 1
        metrics = SimpleNamespace(arrival_time=0.0, finished_time=1.0, spec_rounds=0, spec_verified=0,
                                  spec_accepted=0)
        return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1] * n)], metrics=metrics)]


def _rows(paired, a: list[int], b: list[int]) -> tuple[dict, dict]:
    """`paired_rows` over two fake engines emitting these tokens a call, each call 1 s long."""
    clock = iter(range(1000))
    paired.time = SimpleNamespace(perf_counter=lambda: float(next(clock)), monotonic=lambda: 0.0)
    try:
        rows = paired.paired_rows({"a": _Fake(a), "b": _Fake(b)}, ["p"], None, len(a), 1,
                                  heap=paired.HeapOutside(enabled=False))
    finally:
        import time
        paired.time = time
    return rows[0][2], rows[1][2]


def test_a_call_that_emitted_nothing_leaves_no_geometric_mean(paired) -> None:
    """A round where the first engine, or another, emitted nothing: no crash at the end of a long
    benchmark; its ratio (or the row's geometric mean and interval) is nan."""
    _, b = _rows(paired, [0, 10, 10], [20, 0, 30])
    assert math.isnan(b["paired rounds"][0]) and b["paired rounds"][1:] == [0.0, 3.0]
    assert math.isnan(b["paired geomean"]) and math.isnan(b["paired low"]) and math.isnan(b["paired high"])


def test_rows_carry_every_rounds_ratio(paired) -> None:
    """`paired rounds`: each round's ratio in round order, the traced ones too (step logs held
    only those before)."""
    a, b = _rows(paired, [10, 10, 10], [20, 5, 30])
    assert a["paired rounds"] == [1.0, 1.0, 1.0]
    assert b["paired rounds"] == [2.0, 0.5, 3.0] and b["paired"] == 2.0
    assert b["paired geomean"] == pytest.approx(3.0 ** (1 / 3))   # (2 x 0.5 x 3) ** (1/3)
    assert 0.5 - 1e-9 <= b["paired low"] < b["paired geomean"] < b["paired high"] <= 3.0 + 1e-9
    assert a["paired geomean"] == a["paired low"] == a["paired high"] == pytest.approx(1.0)


class _Drafting(_Fake):
    """A fake whose calls ran these verification steps (one request's `spec_rounds`, another's
    fewer) and these DSpark rounds (its proposer's `drafted_rounds`, behind a wrapper's `inner`)."""

    def __init__(self, tokens: list[int], rounds: list[int], dspark: list[int]) -> None:
        super().__init__(tokens)
        self.rounds, self.dspark = rounds, dspark
        self.inner = SimpleNamespace(drafted_rounds=5)
        self.engine = SimpleNamespace(speculative=SimpleNamespace(proposer=SimpleNamespace(inner=self.inner)))

    def chat(self, prompts, params):
        outs = super().chat(prompts, params) * 2
        n = self.rounds[self.calls - 1]
        self.inner.drafted_rounds += self.dspark[self.calls - 1]
        return [SimpleNamespace(outputs=o.outputs, metrics=SimpleNamespace(**{**vars(o.metrics), "spec_rounds": k}))
                for o, k in zip(outs, (n, n // 2))]


def test_the_printed_rows_carry_each_calls_drafts(paired, capsys) -> None:
    """`call drafts`: each round's most `spec_rounds` of its requests; `call dspark`: the DSpark
    rounds of the call (the proposer's count before and after); both printed before `paired
    rounds` (what `paired_pool.py --split-drafted` reads), untraced rounds included."""
    clock = iter(range(1000))
    paired.time = SimpleNamespace(perf_counter=lambda: float(next(clock)), monotonic=lambda: 0.0)
    try:
        paired.paired_rows({"a": _Fake([10, 10, 10]), "b": _Drafting([20, 5, 30], [3, 2, 7], [3, 0, 4])}, ["p"],
                           None, 3, 1, heap=paired.HeapOutside(enabled=False))
    finally:
        import time
        paired.time = time
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("1 a ") and line.endswith("call drafts [0, 0, 0] call dspark [0, 0, 0] "
                                                         "paired rounds [1.0, 1.0, 1.0]") for line in lines)
    assert any(line.startswith("1 b ") and "call drafts [3, 2, 7] call dspark [3, 0, 4] paired rounds" in line
               for line in lines)


def test_a_frozen_heap_or_a_disabled_collector_is_left_alone(paired) -> None:
    """Another freezer (an engine's call in another thread) or a collector switched off: the
    harness neither collects nor freezes."""
    if not gc.isenabled() or gc.get_freeze_count():
        pytest.skip("the collector is off or the heap is frozen already")
    heap = paired.HeapOutside()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with heap.call():
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen and heap.collections == 0   # not unfrozen by the harness
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        with heap.call():
            assert gc.get_freeze_count() == 0
        assert heap.collections == 0
    finally:
        gc.enable()


@pytest.mark.parametrize("flag", [None, "--gc-in-calls", "--lockstep"])
def test_the_flag_reaches_the_paired_calls(benchmark_script, monkeypatch, tmp_path, flag) -> None:
    """`--gc-in-calls`, parsed, turns `HeapOutside` off in `run_interleaved`'s paired calls;
    `--lockstep` reaches them as `lockstep`."""
    import sys

    from deepinfer_dspark.sps import SPSProfile

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    profile = SPSProfile([1, 64], [1000.0, 900.0])
    profile.save(tmp_path / "sps.json")
    seen = []

    def fake_rows(llms, sets, params, rounds, c, logs=None, path=None, cap=None, traces=None, log_every=1,
                  heap=None, lockstep=False, lockstep_context=None):
        seen.append((heap.enabled, lockstep, lockstep_context))
        return []

    class FakeLLM:
        engine = SimpleNamespace(speculative=None)

        def __init__(self, *args, **kwargs) -> None:
            pass

        def chat(self, prompts, params):
            return []

        def close(self) -> None:
            pass

    import deepinfer_core
    monkeypatch.setattr(deepinfer_core, "LLM", FakeLLM)
    monkeypatch.setattr(bench, "paired_rows", fake_rows)
    monkeypatch.setattr(bench, "built", lambda name, llm: llm)
    monkeypatch.setattr(bench, "profile_run", lambda *a: None)
    monkeypatch.setattr(bench, "torch_profile_run", lambda *a: None)
    argv = ["bench_dspark.py", "--target", "t", "--drafter", "d", "--interleave", "2", "--kv-cache-gib", "1",
            "--variants", "none", "--concurrency", "1", "--prompt-sets", "1", "--sps", str(tmp_path / "sps.json"),
            "--spec-sps", str(tmp_path / "sps.json")] + ([flag] if flag else [])
    monkeypatch.setattr(sys, "argv", argv)
    bench.main()
    assert seen == [(flag != "--gc-in-calls", flag == "--lockstep", None)]   # (no streams on this CPU)
