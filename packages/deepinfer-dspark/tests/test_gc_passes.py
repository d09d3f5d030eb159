# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/gc_passes.py`: the collector's passes are counted for the engine whose call runs
(by generation, none outside a call), and a small run prints a row per engine."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from deepinfer_dspark.sps import SPSProfile


def test_passes_are_counted_for_the_running_engine_only(benchmark_script, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("gc_passes")
    passes = script.Passes()
    try:
        gc.collect(0)                 # no engine running: not counted
        passes.engine = "a"
        gc.collect(2)
        gc.collect(1)
        passes.engine = "b"
        gc.collect(2)
        passes.engine = None
        gc.collect(2)
    finally:
        passes.close()
    assert passes not in gc.callbacks
    counts = {key: value[0] for key, value in passes.passes.items()}
    assert counts[("a", 2)] == 1 and counts[("a", 1)] == 1 and counts[("b", 2)] == 1
    assert all(engine in ("a", "b") for engine, _ in counts)
    assert all(seconds >= 0 for _, seconds in passes.passes.values())
    lengths = [len(p) for p in script.prompts(50, seed=1)]
    assert min(lengths) >= 6 and max(lengths) <= 40


def test_a_small_run_prints_every_engine(benchmark_script, monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    script = benchmark_script("gc_passes")
    SPSProfile([1, 8], [1000.0, 900.0]).save(tmp_path / "sps_batch.json")
    SPSProfile([1, 64], [400.0, 300.0]).save(tmp_path / "spec_sps_batch.json")
    monkeypatch.setattr(sys, "argv", ["gc_passes.py", "--profiles", str(tmp_path), "--concurrency", "2",
                                      "--max-tokens", "4", "--rounds", "2"])
    script.main()
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| engine")]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == list(script.MODES)
    assert gc.get_freeze_count() == 0   # every call unfroze what it froze
