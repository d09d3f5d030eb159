# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/loss_by_call_kind.py`: a speculative engine's traced calls against the baseline's, by
what they drafted, and the slow steps of the calls that drafted nothing."""

from __future__ import annotations

import json
import math
import sys


def step(engine: str, round_: int, kind: str, ms: float, **fields) -> dict:
    return {"engine": engine, "concurrency": 8, "round": round_, "kind": kind, "ms": ms, **fields}


def test_calls_are_classed_and_their_losses_add_up(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """Round 0: the engine drafted nothing and ran 4 ms against the baseline's 2 (a slow step where
    its pause changed); round 1: an opening round and a lookup round; round 2: a body round; round
    3: no baseline call (left out of the classes; its one step is no slow step after another, but
    the call counts among those that drafted nothing); another concurrency's steps are ignored."""
    module = benchmark_script("loss_by_call_kind")
    rows = [step("b", 0, "plain", 1.0), step("b", 0, "plain", 1.0),
            step("c", 0, "plain", 1.0, pause=0), step("c", 0, "plain", 3.0, pause=5),
            step("b", 1, "plain", 6.0), step("c", 1, "drafted", 2.0, judged=[True, 1, 2, 1, 0.9]),
            step("c", 1, "lookup", 1.0),
            step("b", 2, "plain", 3.0), step("c", 2, "drafted", 2.0, judged=[False, 1, 2, 1, 1.2]),
            step("c", 3, "plain", 9.0), {**step("c", 0, "plain", 50.0), "concurrency": 1}]
    log = tmp_path / "steps.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(sys, "argv", ["loss_by_call_kind.py", str(log), "--engine", "c", "--baseline", "b"])
    module.main()
    out = capsys.readouterr().out
    assert "| quiet | 1 | 0.500 | 0.0 | -0.693 |" in out
    assert "| lookup+opening | 1 | 2.000 | 2.0 | +0.693 |" in out
    assert "| body | 1 | 1.500 | 1.0 | +0.405 |" in out
    total = math.log(0.5) + math.log(2.0) + math.log(1.5)
    assert f"all 3 calls: sum of log ratios {total:+.3f}" in out
    assert "c: 0.50 slow steps a call that drafted nothing (2 calls)" in out
    assert "b: 0.00 slow steps a call that drafted nothing (3 calls)" in out
    assert "| pause | 1 | 1 | 1.0000 |" in out


def test_parts_split_the_extra_time_and_add_up(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """`parts` prices each engine step at the baseline call's mean step (2 ms here): a drafted round of
    5 ms is +3, a features step of 2.5 ms +0.5, a lookup round of 4 ms +2, a plain step of 1 ms -1, and
    the baseline's two steps beyond the engine's count -4; they add up to the totals' difference. An
    empty baseline call is refused by name; `--parts` prints each class's row as shares of all the
    baseline's traced time."""
    module = benchmark_script("loss_by_call_kind")
    engine = [step("c", 0, "drafted+flush", 5.0), step("c", 0, "plain", 2.5, features=1),
              step("c", 0, "lookup", 4.0), step("c", 0, "plain", 1.0, features=0)]
    base = [step("b", 0, "plain", ms) for ms in (1.0, 3.0, 2.0, 2.0, 1.0, 3.0)]
    split = module.parts(engine, base)
    assert split == {"drafted": 3.0, "lookup": 2.0, "features": 0.5, "plain": -1.0, "steps saved": -4.0}
    assert math.isclose(sum(split.values()), sum(s["ms"] for s in engine) - sum(s["ms"] for s in base))
    try:
        module.parts(engine, [])
    except ValueError as err:
        assert "baseline" in str(err)
    else:
        raise AssertionError("an empty baseline call was accepted")
    log = tmp_path / "steps.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in engine + base))
    monkeypatch.setattr(sys, "argv", ["loss_by_call_kind.py", str(log), "--engine", "c", "--baseline", "b",
                                      "--parts"])
    module.main()
    out = capsys.readouterr().out
    assert "| drafted+flush+lookup | +25.00% | +16.67% | +4.17% | -8.33% | -33.33% | +4.17% |" in out
