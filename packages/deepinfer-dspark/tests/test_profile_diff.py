# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/profile_diff.py`: two cProfiles of the same loop, one with an extra call per step."""

from __future__ import annotations

import cProfile
import sys
from pathlib import Path

import pytest


@pytest.fixture
def diff(benchmark_script):
    return benchmark_script("profile_diff")


def shared_work() -> int:
    return sum(range(200))


def extra_work() -> int:
    total = 0
    for i in range(20_000):   # own time only (no calls inside): ~1 ms
        total += i * i
    return total


def run(steps: int, extra: bool) -> None:
    for _ in range(steps):
        shared_work()
        if extra:
            extra_work()


def profile(path: Path, extra: bool) -> Path:
    profiler = cProfile.Profile()
    profiler.enable()
    run(20, extra)
    profiler.disable()
    profiler.dump_stats(str(path))
    return path


def test_the_extra_per_step_call_comes_first(diff, tmp_path, capsys, monkeypatch) -> None:
    a, b = profile(tmp_path / "none.prof", False), profile(tmp_path / "confidence.prof", True)
    rows = diff.differences(diff.load(a), diff.load(b))
    key, calls_a, calls_b, ms_a, ms_b = rows[0]
    assert key.endswith("(extra_work)") and (calls_a, calls_b) == (0, 20) and ms_a == 0.0
    shared = next(r for r in rows if r[0].endswith("(shared_work)"))
    assert shared[1] == shared[2] == 20                        # the same calls on both sides
    assert ms_b > 5 * abs(shared[4] - shared[3]), (ms_b, shared)   # its own time, none in `a`
    monkeypatch.setattr(sys, "argv", ["profile_diff.py", str(a), str(b), "--top", "3", "--steps", "20"])
    diff.main()
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if "(extra_work)" in s)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:3] == ["0", "20"] and cells[6] == "+1.0"      # one extra call per step
    assert float(cells[7]) == pytest.approx(1e3 * ms_b / 20, abs=0.1)   # its own time per step, in us
    assert "called only in confidence.prof: " in out


def test_steps_must_be_positive(diff, tmp_path, monkeypatch) -> None:
    a = profile(tmp_path / "a.prof", False)
    monkeypatch.setattr(sys, "argv", ["profile_diff.py", str(a), str(a), "--steps", "0"])
    with pytest.raises(SystemExit):
        diff.main()
