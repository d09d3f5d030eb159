# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/lookup_replay.py`: prompt lookup replayed over saved replies on measured step costs."""

from __future__ import annotations

import json
import sys

from deepinfer_dspark.sps import SPSProfile

DECODE = SPSProfile([1, 64], [1000.0, 1000.0])


def replies() -> list[dict]:
    loop = [101, 102, 103, 104, 105] * 24         # a reply caught in a loop of period 5
    fresh = list(range(200, 320))                  # nothing repeats
    return [{"prompt": [1, 2, 3, 4], "reply": loop}, {"prompt": [5, 6, 7, 8], "reply": fresh}]


def test_drafts_pay_on_a_loop_and_fresh_text_runs_plain(benchmark_script) -> None:
    replay = benchmark_script("lookup_replay")
    assert replay.accepted_of([1, 2, 9], [1, 2, 3, 4]) == 2 and replay.accepted_of([1, 2], [1]) == 1
    plain = [1.0 * (len(r["reply"]) - 1) for r in replies()]
    for run in (lambda c: replay.replay_ngram(replies(), 7, c),
                lambda c: replay.replay_lookup(replies(), 7, 2, DECODE, c)):
        costs = replay.Costs(1.0, 2.0, 0.6)
        loop, fresh = run(costs)
        assert loop < plain[0] / 2           # most of the loop drafted, 8 tokens a 2-step round
        assert fresh == plain[1]             # no match: every step plain, at its plain cost
        assert costs.rounds > 0 and costs.accepted / costs.rounds > 5


def test_the_script_prints_a_row_per_policy(benchmark_script, tmp_path, monkeypatch, capsys) -> None:
    replay = benchmark_script("lookup_replay")
    (tmp_path / "replies.json").write_text(json.dumps({"replies": replies()}))
    DECODE.save(tmp_path / "sps.json")
    monkeypatch.setattr(sys, "argv", ["lookup_replay.py", "--replies", str(tmp_path / "replies.json"),
                                      "--profiles", str(tmp_path), "--lookup", "2", "4", "--check-every", "1", "8"])
    replay.main()
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ngram") or
            line.startswith("| lookup")]
    assert len(rows) == 5 and all(float(row.split("|")[2]) > 1.0 for row in rows)
