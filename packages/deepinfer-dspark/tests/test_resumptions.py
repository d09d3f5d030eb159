# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/resumptions.py`: the steps around each resumption of drafting in a step log."""

from __future__ import annotations

import json
import lzma


def step(engine: str, round_: int, kind: str, ms: float, stretch: str = "", prefill: int = 0) -> dict:
    return {"engine": engine, "concurrency": 8, "round": round_, "kind": kind, "ms": ms, "stretch": stretch,
            "prefill_tokens": prefill}


def test_resumptions_are_counted_per_engine_across_logs(benchmark_script, tmp_path, capsys, monkeypatch) -> None:
    """A drafted round after a plain decode step is a resumption (its two steps before counted
    with it); one after a prefill step, a lookup round or a drafted round is not; calls are kept
    apart by round and by log, so a call's first drafted round never pairs with another call's
    steps."""
    module = benchmark_script("resumptions")
    first = [step("a", 0, "plain", 3.0, prefill=40), step("a", 0, "plain", 1.0, "q"), step("a", 0, "plain", 2.0),
             step("a", 0, "drafted+flush", 7.0), step("a", 0, "drafted", 3.5), step("a", 0, "lookup", 3.0),
             step("a", 0, "drafted", 9.0),   # after a lookup round: not a resumption, not inside a run
             step("a", 1, "plain", 3.0, prefill=40), step("a", 1, "drafted", 8.0),   # after a prefill: neither
             step("b", 0, "plain", 1.0, prefill=40), step("b", 0, "plain", 1.0), step("b", 0, "plain", 1.5, "q"),
             step("b", 0, "plain", 2.0), step("b", 0, "drafted", 5.0)]
    second = [step("a", 0, "plain", 1.2, "q"), step("a", 0, "plain", 1.8), step("a", 0, "drafted", 6.0),
              step("a", 0, "drafted", 3.7)]
    rows = {r["engine"]: r for r in module.resumptions([first, second])}
    a, b = rows["a"], rows["b"]
    assert (a["resumed"], a["flushed"], a["quiet_before2"]) == (2, 1, 2)
    assert a["round_ms"] == 6.5 and a["before_ms"] == 1.9 and a["before2_ms"] == 1.1 and a["three_ms"] == 9.5
    assert a["in_run_ms"] == 3.6   # (3.5 + 3.7) / 2: the rounds after a drafted round only
    assert (b["resumed"], b["flushed"], b["quiet_before2"], b["three_ms"], b["in_run_ms"]) == (1, 0, 1, 8.5, None)
    paths = [tmp_path / "a.jsonl.xz", tmp_path / "b.jsonl.xz"]
    for path, rows_ in zip(paths, (first, second)):
        with lzma.open(path, "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows_)
    monkeypatch.setattr("sys.argv", ["resumptions.py", *map(str, paths), "--concurrency", "8"])
    module.main()
    out = capsys.readouterr().out
    assert "| 8 | a | 2 (1) | 6.50 | 1.90 | 1.10 (2) | 9.50 | 3.60 |" in out
    assert "| 8 | b | 1 (0) | 5.00 | 2.00 | 1.50 (1) | 8.50 | - |" in out
