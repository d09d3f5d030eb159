# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/slow_step_phases.py`: slow and other steps' phase means by engine, `other` as the
step's ms less its phases, `--quiet` leaving out a speculative engine's drafted calls."""

from __future__ import annotations

import json
import lzma

import pytest


def _row(engine, rnd, ms, phases, kind="plain", running=8):
    return {"engine": engine, "concurrency": 8, "round": rnd, "running": running, "kind": kind, "ms": ms,
            "phases": phases}


def test_slow_steps_by_phase(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    script = benchmark_script("slow_step_phases")
    rows = [_row("none", 0, 1.0, {"launch": 0.4, "wait": 0.3}), _row("none", 0, 2.0, {"launch": 0.4, "wait": 1.3}),
            _row("none", 0, 1.0, {"launch": 0.4}, running=0),   # a prefill-only step: left out
            _row("confidence", 0, 1.0, {"launch": 0.5, "spec": 0.1}),
            _row("confidence", 0, 3.0, {"launch": 0.5, "spec": 0.1, "gc": 2.0}),
            _row("confidence", 1, 5.0, {"launch": 4.0}), _row("confidence", 1, 1.0, {}, kind="drafted"),
            {**_row("none", 2, 9.0, {"launch": 9.5}), "concurrency": 32}]   # another concurrency: left out
    path = tmp_path / "steps.jsonl.xz"
    with lzma.open(path, "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    steps = script.steps_of([str(path)], 8, quiet=True)
    assert sorted(len(v) for v in steps.values()) == [2, 2]   # the drafted call (round 1) and the prefill out
    assert script.split(steps["none"][1]) == pytest.approx({"launch": 0.4, "wait": 1.3, "other": 0.3})
    lines = script.table(steps, slow=1.6)
    conf = next(line for line in lines if line.startswith("| confidence"))
    cells = [c.strip() for c in conf.strip("|").split("|")]
    assert cells[1:3] == ["2", "0.500"]
    by_phase = dict(zip(script.PHASES, cells[3:]))
    assert by_phase["gc"] == "2.000 / 0.000" and by_phase["other"] == "0.400 / 0.400"
    assert len(script.steps_of([str(path)], 8, quiet=False)["confidence"]) == 4
    at_32 = script.steps_of([str(path)], 32, quiet=True)
    assert list(at_32) == ["none"] and script.split(at_32["none"][0])["other"] == 0.0   # phases over ms: 0, not < 0
    monkeypatch.setattr("sys.argv", ["slow_step_phases.py", str(path), "--quiet"])
    script.main()
    assert "| none | 2 | 0.500 |" in capsys.readouterr().out
