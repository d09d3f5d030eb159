# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/sps_profiles.py`: a profile's engine first runs `warmup_seconds` of batches that
are not measured (on the H200 an engine's first seconds of drafted rounds ran 20-30% slower)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest



@pytest.fixture
def profiles(benchmark_script, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))   # engine_probes
    return benchmark_script("sps_profiles")


def _count(line: str, cell: str) -> int:
    found = re.search(re.escape(cell) + r" [0-9.]+ ms x(\d+)", line)
    return int(found.group(1)) if found else 0


def test_warm_up_steps_are_not_measured(profiles, folders, capsys) -> None:
    target, _ = folders
    engine_kw = dict(load_format="dummy", dtype="float32", max_model_len=160, block_size=4,
                     kv_cache_memory=32 << 20, deterministic=True, seed=11)
    profile = profiles.measure_sps(str(target), [1], engine_kw, max_tokens=8, repeats=1, method="steps",
                                   warmup_seconds=0.0)
    lines = capsys.readouterr().out.splitlines()
    warm = next(line for line in lines if "warm-up" in line)
    measured = next(line for line in lines if line.startswith("decode profile at 1:"))
    # One `_timed` call each (a one-request warm-up batch, then the batch): the warm-up's steps
    # are printed apart and forgotten, so the measured line counts the same steps again, not twice.
    assert _count(warm, "1 plain") > 0
    assert _count(measured, "1 plain") == _count(warm, "1 plain")
    assert profile.batch_tokens == [1] and profile.steps_per_s[0] > 0
    assert profile.meta["method"].endswith("0 s warm-up")


def test_the_speculative_profile_warms_up_too(profiles, folders, capsys) -> None:
    target, drafter = folders
    engine_kw = dict(load_format="dummy", dtype="float32", max_model_len=160, block_size=4,
                     kv_cache_memory=32 << 20, deterministic=True, seed=11)
    profile = profiles.measure_spec_sps(str(target), str(drafter), 3, [1], engine_kw, max_tokens=8, repeats=1,
                                        method="steps", warmup_seconds=0.0)
    lines = capsys.readouterr().out.splitlines()
    warm = next(line for line in lines if line.startswith("k=3 profile warm-up"))
    measured = next(line for line in lines if line.startswith("k=3 profile at 1:"))
    # the same deterministic batches: the measured line counts its own rounds only, not the warm-up's too
    cell = "1 drafted+eager"   # on the CPU every draft runs eagerly (`StepTimes`)
    assert _count(warm, cell) > 0 and _count(measured, cell) == _count(warm, cell)
    assert profile.meta["method"].endswith("0 s warm-up") and profile.batch_tokens == [4]


def test_warm_up_runs_until_its_seconds_have_passed(profiles, monkeypatch) -> None:
    clock = iter(range(100))
    monkeypatch.setattr(profiles.time, "perf_counter", lambda: float(next(clock)))
    calls = []
    monkeypatch.setattr(profiles, "_timed", lambda llm, batch, chat, max_tokens: calls.append(len(batch)))

    class Trace:
        taken = 0

        def take(self) -> str:
            self.taken += 1
            return "step times: -"

    trace = Trace()
    profiles._warm_up(object(), None, 2, 8, 3.0, trace, "test")   # the fake clock ticks 1 s per read
    assert calls == [2, 2, 2] and trace.taken == 1
    profiles._warm_up(object(), None, 2, 8, 0.0, None, "test")    # at least one batch, without a trace
    assert calls == [2, 2, 2, 2]


def test_sizes_are_measured_in_passes_and_a_slow_pass_is_outvoted(profiles, monkeypatch) -> None:
    """Each pass measures every size once; a size's rate is the median over passes, so a slow
    spell over one pass of a size (session 24: 1.65 ms at 32 requests where the benchmark then
    ran 1.15) does not set its rate."""
    from types import SimpleNamespace

    order = []
    slow = {(1, 32)}   # (pass, size) hit by a slow spell

    def timed(llm, batch, chat, max_tokens):
        order.append(len(batch))
        size, passes = len(batch), order.count(len(batch)) - 1
        per_step = (2.0 if (passes, size) in slow else 1.0) * 1e-3 * (1 + size / 64)
        metrics = SimpleNamespace(first_token_time=0.0, finished_time=per_step * 10, spec_rounds=10)
        return [SimpleNamespace(metrics=metrics, outputs=[SimpleNamespace(token_ids=[0] * 11)], error=None)
                for _ in range(size)]

    monkeypatch.setattr(profiles, "_timed", timed)
    rates = profiles._measure_sizes(None, None, [16, 32, 64], 11, 3, None, "plain", "request", "test",
                                    lambda o: len(o.outputs[0].token_ids) - 1)
    assert order == [16, 32, 64] * 3
    assert rates == pytest.approx([1e3 / (1 + b / 64) for b in (16, 32, 64)])   # the slow pass outvoted


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
