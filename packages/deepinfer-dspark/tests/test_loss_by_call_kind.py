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
    """`parts` prices each engine step at the baseline call's mean step (2.2 ms here, where the median
    is 2): a drafted round of 5 ms is +2.8, the plain step after it that verified its drafts (2.6 ms)
    +0.4 to the round too, a features step of 2.5 ms +0.3, a lookup round of 4 ms +1.8, a plain step of
    1 ms -1.2, and the baseline's step beyond the engine's count -2.2; they add up to the totals'
    difference. An empty baseline call is refused by name; `--parts` prints each class's row as shares
    of all the baseline's traced time."""
    module = benchmark_script("loss_by_call_kind")
    engine = [step("c", 0, "drafted+flush", 5.0), step("c", 0, "plain", 2.6, features=1, verified=3),
              step("c", 0, "plain", 2.5, features=1), step("c", 0, "lookup", 4.0),
              step("c", 0, "plain", 1.0, features=0)]
    base = [step("b", 0, "plain", ms) for ms in (1.0, 3.0, 2.0, 2.0, 1.0, 4.2)]
    split = module.parts(engine, base)
    expected = {"drafted": 3.2, "lookup": 1.8, "features": 0.3, "plain": -1.2, "steps saved": -2.2}
    assert split.keys() == expected.keys()
    assert all(math.isclose(split[k], v, abs_tol=1e-9) for k, v in expected.items()), split
    assert math.isclose(sum(split.values()), sum(s["ms"] for s in engine) - sum(s["ms"] for s in base))
    assert module.part(step("c", 0, "plain", 1.0, verified=2)) == "plain"   # no round before it
    more = module.parts(engine, base[:4])   # the engine ran one step more: a positive `steps saved`
    assert math.isclose(more["steps saved"], 2.0) and math.isclose(sum(more.values()), 15.1 - 8.0)
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
    assert "| drafted+flush+lookup | +24.24% | +13.64% | +2.27% | -9.09% | -16.67% | +14.39% |" in out
