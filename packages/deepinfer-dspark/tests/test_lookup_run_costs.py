# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/lookup_run_costs.py`: a lookup run's measured cost in plain steps, against the
`RoundCosts` price, read from a step log."""

from __future__ import annotations

import json
import lzma
import random

import pytest

from deepinfer_dspark.round_costs import RoundCosts


def step(engine: str, i: int, running: int, kind: str, ms: float, verified: int = 0) -> dict:
    return {"engine": engine, "concurrency": 8, "round": 9, "step": i, "running": running, "kind": kind,
            "ms": ms, "verified": verified, "prefill_tokens": 0, "emitted": running}


def log(tmp_path, rows: list[dict]):
    path = tmp_path / "steps.jsonl.xz"
    random.Random(3).shuffle(rows)   # (the reader orders a call's steps itself)
    with lzma.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return path


def test_a_run_and_the_step_after_it_less_one_plain_step_each(tmp_path, benchmark_script) -> None:
    costs = benchmark_script("lookup_run_costs")
    plain = [step("e", 0, 4, "plain", 1.0), step("e", 1, 4, "plain", 1.5)]
    run = [step("e", 2, 4, "lookup", 3.75, 14), step("e", 3, 4, "lookup", 2.5, 14), step("e", 4, 4, "plain", 2.5)]
    tail = [step("e", 5, 4, "plain", 1.25), step("e", 6, 1, "lookup", 2.0, 3)]   # (no step after it: not a run)
    calls = costs.read_calls(log(tmp_path, plain + run + tail))
    rows = calls[("e", 8, 9)]
    assert [r["step"] for r in rows] == list(range(7))
    assert costs.lookup_runs(rows) == [(2, 2)]
    dspark = [step("f", 0, 4, "plain", 1.0), step("f", 1, 4, "drafted", 4.0), step("f", 2, 4, "lookup", 3.0),
              step("f", 3, 4, "plain", 1.0), step("f", 4, 4, "lookup", 3.0), step("f", 5, 4, "drafted", 4.0),
              step("f", 6, 4, "plain", 1.0), step("f", 7, 4, "lookup", 3.0), step("f", 8, 4, "plain", 1.0)]
    assert costs.lookup_runs(dspark) == [(7, 1)]   # (after a DSpark round, or before one: left out)
    assert costs.plain_medians(rows, costs.lookup_runs(rows)) == {4: 1.25}   # (the step after the run left out)
    [(extra, length, verified)] = costs.measured(calls, None)[4]
    assert extra == pytest.approx((3.75 + 2.5 + 2.5) / 1.25 - 3) and (length, verified) == (2, 28)
    assert costs.measured(calls, {2}) == {}
    lone = [step("g", 0, 3, "plain", 1.0), step("g", 1, 3, "plain", 3.0), step("g", 2, 2, "lookup", 4.0),
            step("g", 3, 2, "plain", 4.0)]   # (no plain step at 2 running but the one after the run)
    [(extra, _, _)] = costs.measured({("g", 8, 0): lone}, None)[2]
    assert extra == pytest.approx((4.0 + 4.0) / 2.0 - 2)   # (in the median over the call's counts, 2.0 ms)
    price = RoundCosts()
    assert costs.priced_extra(price, 4, 2) == pytest.approx(price.priced(4, False) + price.priced(4, True))


def test_the_table_and_a_missing_log(tmp_path, benchmark_script, capsys) -> None:
    costs = benchmark_script("lookup_run_costs")
    rows = [step("e", i, 2, "plain", 1.0) for i in range(6)] + [step("e", 6, 2, "lookup", 3.0, 7),
                                                                step("e", 7, 2, "plain", 1.0)]
    costs.main([str(log(tmp_path, rows))])
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("| 2 |")]
    assert line == [f"| 2 | 1 | 1.00 | 7 | 2.00 (2.00-2.00) | {RoundCosts().priced(2, False):.2f} |"]
    with pytest.raises(SystemExit):
        costs.main([str(tmp_path / "nothing.jsonl.xz")])
