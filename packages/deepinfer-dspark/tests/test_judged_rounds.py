# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/judged_rounds.py`: drafted rounds as judged against what they realized."""

from __future__ import annotations

import json
import lzma

import pytest


def step(engine: str, kind: str, ms: float, running: int, emitted: int = 0, round_: int = 0, prefill: int = 0,
         verified: int = 0, **ledger) -> dict:
    return {"engine": engine, "concurrency": 8, "round": round_, "kind": kind, "ms": ms, "running": running,
            "emitted": emitted, "prefill_tokens": prefill, "verified": verified, **ledger}


def test_runs_are_priced_in_the_baselines_plain_steps(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """A run is its drafted steps (each verified drafts in the same step) and the step after it
    that verified its last drafts; its realized gain is what those steps emitted per running request,
    in the baseline's median decode step at that running count (the nearest count, the smaller on
    a tie, where it has none), over their ms, time-weighted over the runs, and apart for the steps
    logged within the least advanced request's first 32 tokens (`reply`) and the others. Every judgement counts,
    split by opening and body, the call's last step's too."""
    module = benchmark_script("judged_rounds")
    rows = [step("none", "plain", 9.0, 4, prefill=40), step("none", "plain", 1.0, 4), step("none", "plain", 1.2, 4),
            step("none", "plain", 1.4, 4), step("none", "plain", 2.0, 8), step("none", "plain", 3.0, 6),
            step("c", "plain", 3.0, 8, prefill=40),
            step("c", "drafted", 6.0, 8, 24, verified=30, judged=[True, 9.0, 40, 1.2, 1.1], round_time=1.1, reply=20,
                 straggler=0.5),   # an opening's factor: not the bodies' mean
            step("c", "drafted+flush", 5.0, 8, 16, verified=30, round_time=1.3),
            step("c", "plain", 2.0, 5, 10, verified=12),     # verifies the run's last drafts; 5: 4's and 6's tie -> 4
            step("c", "plain", 1.0, 5, 5, judged=[False, 7.0, 40, 0.9, 0.8], straggler=0.75),   # not in the run
            step("c", "drafted", 4.0, 4, 8, round_=1, verified=8),   # a run of one
            step("c", "plain", 1.0, 4, 4, round_=1, judged=[False, 5.0, 40, 1.2, 1.0], straggler=0.85),
            step("fixed", "drafted", 4.0, 8, 16, verified=56), step("fixed", "plain", 1.0, 8, 0)]   # nothing verified
    out = {r["engine"]: r for r in module.judged_rounds([rows])}
    c, fixed = out["c"], out["fixed"]
    plain = 24 / 8 * 2.0 + 16 / 8 * 2.0 + 10 / 5 * 1.2 + 8 / 4 * 1.2
    assert c["rounds"] == 3 and c["realized"] == pytest.approx(plain / (6.0 + 5.0 + 2.0 + 4.0))
    assert c["realized_opening"] == pytest.approx(24 / 8 * 2.0 / 6.0)   # the one step logged within 32 tokens
    assert c["realized_body"] == pytest.approx((plain - 24 / 8 * 2.0) / (5.0 + 2.0 + 4.0))
    assert c["opening"] == (1, 1.1) and c["body"] == (2, pytest.approx(0.9)) and c["ratio"] == pytest.approx(1.1)
    assert c["round_ms"] == 5.0 and c["correction"] == pytest.approx(1.2)
    assert c["straggler"] == pytest.approx(0.8) and fixed["straggler"] is None   # bodies' mean; none before session 69
    assert fixed["rounds"] == 1 and fixed["realized"] == pytest.approx(16 / 8 * 2.0 / 4.0)
    assert fixed["opening"] == (0, None) and fixed["correction"] is None and "none" not in out
    assert module.judged_rounds([rows], baseline="missing")[0]["realized"] is None   # judged, but not priced
    path = tmp_path / "steps.jsonl.xz"
    with lzma.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    monkeypatch.setattr("sys.argv", ["judged_rounds.py", str(path), "--concurrency", "8"])
    module.main()
    printed = capsys.readouterr().out
    assert (f"| 8 | c | 3 | {plain / 17:.3f} (1.000 / {(plain - 6.0) / 11:.3f}) | 1 (1.100) | 2 (0.900) | 1.100 "
            "| 5.00 | 1.200 | 0.800 |") in printed
    assert "| 8 | fixed | 1 | 1.000 (- / 1.000) | 0 (-) | 0 (-) | - | - | - | - |" in printed
