# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/judged_rounds.py`: drafted rounds as judged against what they realized."""

from __future__ import annotations

import json
import lzma

import pytest


def step(engine: str, kind: str, ms: float, running: int, emitted: int = 0, round_: int = 0, prefill: int = 0,
         **ledger) -> dict:
    return {"engine": engine, "concurrency": 8, "round": round_, "kind": kind, "ms": ms, "running": running,
            "emitted": emitted, "prefill_tokens": prefill, **ledger}


def test_rounds_are_priced_in_the_baselines_plain_steps(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """A drafted round's realized gain is what the next step emitted per running request, in the
    baseline's median decode step at that running count (the nearest count where it has none),
    over that step's ms; the judgements are split by opening and body, wherever they were logged."""
    module = benchmark_script("judged_rounds")
    rows = [step("none", "plain", 9.0, 4, prefill=40), step("none", "plain", 1.0, 4), step("none", "plain", 1.2, 4),
            step("none", "plain", 1.4, 4), step("none", "plain", 2.0, 8),
            step("c", "plain", 3.0, 8, prefill=40),
            step("c", "drafted", 5.0, 8, 8, judged=[True, 9.0, 40, 1.2, 1.1], round_time=1.1),
            step("c", "drafted+flush", 6.0, 8, 24, judged=[False, 7.0, 40, 0.9, 0.8], round_time=1.3),
            step("c", "plain", 2.5, 5, 15),          # running 5: priced at 4's 1.2 ms
            step("c", "drafted", 4.0, 4, 4, round_=1),   # a call's last step: no step after it, not counted
            step("fixed", "drafted", 4.0, 8, 8), step("fixed", "drafted", 4.0, 8, 16)]
    out = {r["engine"]: r for r in module.judged_rounds([rows])}
    c, fixed = out["c"], out["fixed"]
    assert c["rounds"] == 2 and c["realized"] == pytest.approx((24 / 8 * 2.0 / 6.0 + 15 / 5 * 1.2 / 2.5) / 2)
    assert c["opening"] == (1, 1.1) and c["body"] == (1, 0.8) and c["ratio"] == pytest.approx(1.05)
    assert c["round_ms"] == 4.25 and c["correction"] == pytest.approx(1.2)
    assert fixed["rounds"] == 1 and fixed["realized"] == pytest.approx(16 / 8 * 2.0 / 4.0)
    assert fixed["opening"] == (0, None) and fixed["correction"] is None and "none" not in out
    path = tmp_path / "steps.jsonl.xz"
    with lzma.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    monkeypatch.setattr("sys.argv", ["judged_rounds.py", str(path), "--concurrency", "8"])
    module.main()
    printed = capsys.readouterr().out
    assert "| 8 | c | 2 | 1.220 | 1 (1.100) | 1 (0.800) | 1.050 | 4.25 | 1.200 |" in printed
    assert "| 8 | fixed | 1 | 1.000 | 0 (-) | 0 (-) | - | 4.00 | - |" in printed
