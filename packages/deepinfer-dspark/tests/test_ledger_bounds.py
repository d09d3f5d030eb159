# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/ledger_bounds.py`: the ledger's `bound` by requests running, on hand-made logs."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def ledger_bounds(benchmark_script):
    return benchmark_script("ledger_bounds")


def step(engine, round_, index, running, bound, kind="plain", prefill=0, concurrency=8):
    row = dict(engine=engine, concurrency=concurrency, round=round_, step=index, running=running, kind=kind,
               ms=1.0, emitted=running, prefill_tokens=prefill)
    if bound is not None:
        row["bound"] = bound
    return row


def rows():
    return [step("confidence", 0, 0, 0, 2.0, prefill=80),                 # prefill: left out
            step("confidence", 0, 2, 8, 0.9),                              # next: step 3, plain
            step("confidence", 0, 1, 8, 1.2),                              # next (sorted): step 2, plain
            step("confidence", 0, 3, 8, 1.1),                              # next: step 4, drafted
            step("confidence", 0, 4, 8, 0.8, kind="drafted+flush"),        # last of its call: no next
            step("confidence", 1, 0, 8, 1.3),                              # next: lookup (not the bound's)
            step("confidence", 1, 1, 8, None, kind="lookup"),              # no bound: left out
            step("confidence", 1, 2, 7, 0.95),                             # last of its call
            step("confidence", 1, 3, 7, float("nan")),                     # not finite: left out
            step("confidence", 1, 4, 7, True),                             # not a number: left out
            step("confidence", 0, 5, 8, 5.0, concurrency=1)]               # another concurrency


def test_cells_read_median_share_above_and_the_next_step_by_call(ledger_bounds) -> None:
    cells = ledger_bounds.bounds_by_running(rows(), 8)
    assert set(cells) == {("confidence", 8), ("confidence", 7)}
    at8 = cells[("confidence", 8)]
    assert at8["steps"] == 5 and at8["median"] == pytest.approx(1.1)
    assert at8["p90"] == pytest.approx(1.3) and at8["above"] == pytest.approx(3 / 5)
    assert at8["drafted_above"] == pytest.approx(1 / 3)   # 1.2 -> plain, 1.1 -> drafted, 1.3 -> lookup
    assert at8["drafted_below"] == pytest.approx(0.0)     # 0.9 -> plain; 0.8 ends its call
    at7 = cells[("confidence", 7)]
    assert at7["steps"] == 1 and at7["median"] == pytest.approx(0.95)
    assert at7["drafted_above"] is None and at7["drafted_below"] == pytest.approx(0.0)   # next: the nan step, plain


def test_table_rows_per_engine_and_running(ledger_bounds) -> None:
    lines = ledger_bounds.table(ledger_bounds.bounds_by_running(rows(), 8), ["confidence"])
    assert lines[2] == "| confidence | 7 | 1 | 0.950 | 0.950 | 0.000 | - / 0.000 |"
    assert lines[3] == "| confidence | 8 | 5 | 1.100 | 1.300 | 0.600 | 0.333 / 0.000 |"


def test_cli_pools_processes_without_joining_their_calls(tmp_path) -> None:
    paths = []
    for index, bounds in enumerate(([1.2], [0.7])):   # each process: one call of one step, then a drafted step
        path = tmp_path / f"p{index}.jsonl.xz"
        lines = [step("confidence", 0, 0, 8, bounds[0]), step("confidence", 0, 1, 8, None, kind="drafted")]
        with lzma.open(path, "wt") as f:
            f.write("".join(json.dumps(r) + "\n" for r in lines))
        paths.append(path)
    cli = Path(__file__).resolve().parents[1] / "benchmarks" / "ledger_bounds.py"
    out = subprocess.run([sys.executable, str(cli), *map(str, paths), "--concurrency", "8"],
                         capture_output=True, text=True, check=True).stdout
    assert "| confidence | 8 | 2 | 0.950 | 1.200 | 0.500 | 1.000 / 1.000 |" in out
    bad = subprocess.run([sys.executable, str(cli), str(paths[0]), "--concurrency", "4"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--concurrency: no step with a `bound` at 4" in bad.stderr
