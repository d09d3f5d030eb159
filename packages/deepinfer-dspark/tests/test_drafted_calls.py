# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/drafted_calls.py`: traced calls that drafted against the baseline's same call."""

from __future__ import annotations

import json
import math

import pytest


def step(engine: str, kind: str, ms: float, running: int, emitted: int = 0, round_: int = 0,
         prefill: int = 0) -> dict:
    return {"engine": engine, "concurrency": 8, "round": round_, "kind": kind, "ms": ms, "running": running,
            "emitted": emitted, "prefill_tokens": prefill}


def test_calls_are_paired_with_the_baselines_same_round_by_phase(benchmark_script, tmp_path, capsys,
                                                                  monkeypatch) -> None:
    """Each call of another engine pairs with the baseline's call of the same round in the same
    log (step sums); its steps split by drafted / plain and one / more running; the tail's loss is
    the D1 steps' ms over the baseline's median decode step at its fewest running requests (here 1)
    times their tokens; calls without
    a traced baseline call are left out; the summary splits calls that drafted from the others."""
    module = benchmark_script("drafted_calls")
    rows = [step("none", "plain", 2.0, 0, prefill=40), step("none", "plain", 1.0, 8, 8),
            step("none", "plain", 1.0, 1, 1),
            step("none", "plain", 3.0, 8, 8, round_=1), step("none", "plain", 1.4, 1, 1, round_=1),
            step("c", "plain", 2.0, 0, prefill=40), step("c", "drafted", 3.5, 8, 24),
            step("c", "drafted+flush", 6.0, 1, 2),
            step("c", "plain", 1.0, 1, 1),
            step("c", "plain", 4.2, 8, 8, round_=1), step("c", "plain", 1.0, 1, 1, round_=1),
            step("c", "drafted", 9.0, 8, 8, round_=2)]   # round 2: no baseline call
    calls = module.drafted_calls([rows])
    assert [(c["engine"], c["round"]) for c in calls] == [("c", 0), ("c", 1)]
    first, second = calls
    assert first["ms"] == pytest.approx(12.5) and first["base_ms"] == pytest.approx(4.0)
    assert first["realized"] == pytest.approx(4.0 / 12.5) and first["drafted"] == 2
    assert first["ms_by"] == pytest.approx({"Dn": 3.5, "D1": 6.0, "Pn": 2.0, "P1": 1.0})
    assert first["tokens_by"] == {"Dn": 24, "D1": 2, "Pn": 0, "P1": 1}
    assert first["flushes"] == 1 and first["flush_ms"] == 6.0
    lone = (1.0 + 1.4) / 2   # the baseline's decode steps at one request, both rounds
    assert first["tail_loss"] == pytest.approx(6.0 - lone * 2)
    assert second["drafted"] == 0 and second["realized"] == pytest.approx(4.4 / 5.2) and second["tail_loss"] == 0.0
    (cell,) = module.summary(calls)
    assert (cell["drafted"], cell["plain"]) == (1, 1)
    assert cell["realized_drafted"] == pytest.approx(4.0 / 12.5)
    assert cell["realized_plain"] == pytest.approx(4.4 / 5.2)
    both = module.summary([first, {**first, "round": 3, "realized": 0.5}])[0]
    assert both["realized_drafted"] == pytest.approx(math.sqrt(4.0 / 12.5 * 0.5)) and both["realized_plain"] is None
    path = tmp_path / "steps.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr("sys.argv", ["drafted_calls.py", str(path), "--calls"])
    module.main()
    printed = capsys.readouterr().out
    assert f"| 8 | c | 1 | {4.0 / 12.5:.3f} | 1 | {4.4 / 5.2:.3f} | {6.0 - lone * 2:.1f} | 1 |" in printed
    assert "| 0 | 8 | c | 0 | 0.320 | 2 | 3.5/24 | 6.0/2 | 2.0/0 | 1.0/1 | 1 (6.0) |" in printed


def test_budget_splits_a_calls_loss_exactly(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """`budget`: the prefill's difference, the drafted (or verifying) steps against the baseline's
    mean decode step times the steps they stand for, the plain steps with and without features
    against the same mean; the parts add up to the call's ms less the baseline's. `--budget` prints
    the drafted calls' means, the pooled realized gain and the quiet calls' loss."""
    module = benchmark_script("drafted_calls")
    base = [step("none", "plain", 2.0, 0, prefill=40)]
    base += [step("none", "plain", ms, 8, 8) for ms in (1.0, 1.2, 1.1, 0.9, 1.8)]
    mean = (1.0 + 1.2 + 1.1 + 0.9 + 1.8) / 5   # (1.2: not the median, 1.1)
    spec = [step("c", "plain", 2.5, 0, prefill=40), {**step("c", "plain", 1.4, 8, 8), "features": 1},
            step("c", "drafted", 3.0, 8, 24), {**step("c", "plain", 1.5, 8, 8), "verified": 8},
            step("c", "plain", 0.8, 8, 8)]
    got = module.budget(spec, base)
    assert got["prefill"] == pytest.approx(0.5)
    stood = mean * (5 - 2)   # five baseline decode steps, two plain ones here
    assert got["drafted"] == pytest.approx(3.0 + 1.5 - stood) and got["realized"] == pytest.approx(stood / 4.5)
    assert got["plain_features"] == pytest.approx(1.4 - mean) and got["plain_other"] == pytest.approx(0.8 - mean)
    assert got["loss"] == pytest.approx(sum(r["ms"] for r in spec) - sum(r["ms"] for r in base))
    assert (got["drafted_steps"], got["plain_steps"], got["base_steps"]) == (2, 2, 5)
    quiet = module.budget([step("c", "plain", 2.0, 0), step("c", "plain", 1.0, 8, 8)], base[:3])
    assert quiet["realized"] is None and quiet["drafted_steps"] == 0
    assert quiet["loss"] == pytest.approx(3.0 - 4.2) and quiet["drafted"] == pytest.approx(-1.1)   # 2 decode steps
    for bad in (([], base), (spec, base[:1])):
        with pytest.raises(ValueError, match="budget"):
            module.budget(*bad)
    slower = [{**r, "round": 1, "engine": "c", "ms": r["ms"] + 0.1} for r in base]   # a quiet call
    dearer = [{**r, "round": 2, "ms": r["ms"] * 2 if r["kind"] == "drafted" else r["ms"]} for r in spec]
    again = module.budget(dearer, base)   # a second drafted call: its drafted step twice as dear
    rows = base + spec + [{**r, "round": 1} for r in base] + slower + [{**r, "round": 2} for r in base] + dearer
    path = tmp_path / "steps.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr("sys.argv", ["drafted_calls.py", str(path), "--budget"])
    module.main()
    printed = capsys.readouterr().out
    pooled = 2 * stood / (4.5 + 7.5)   # summed stood-for time over summed drafted ms, not a mean of ratios
    assert again["realized"] == pytest.approx(stood / 7.5)
    assert (f"| 8 | c | 2 | {(got['loss'] + again['loss']) / 2:+.2f} | +0.50 "
            f"| {(got['drafted'] + again['drafted']) / 2:+.2f} ({pooled:.3f}) "
            f"| {1.4 - mean:+.2f} | {0.8 - mean:+.2f} | +0.60 |") in printed
