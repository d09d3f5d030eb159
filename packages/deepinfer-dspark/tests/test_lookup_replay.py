# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/lookup_replay.py`: prompt lookup replayed over saved replies on measured step costs."""

from __future__ import annotations

import json
import sys

import pytest

from deepinfer_dspark.round_costs import RoundCosts
from deepinfer_dspark.sps import SPSProfile

DECODE = SPSProfile([1, 64], [1000.0, 1000.0])
LOOP = {"prompt": [1, 2, 3, 4], "reply": [101, 102, 103, 104, 105] * 24}   # caught in a loop of period 5
FRESH = {"prompt": [5, 6, 7, 8], "reply": list(range(200, 320))}           # nothing repeats


@pytest.mark.parametrize("policy", ["ngram", "lookup"])
def test_drafts_pay_on_a_loop_and_fresh_text_runs_plain(benchmark_script, policy: str) -> None:
    replay = benchmark_script("lookup_replay")
    assert replay.accepted_of([1, 2, 9], [1, 2, 3, 4]) == 2 and replay.accepted_of([1, 2], [1]) == 1
    make = replay.Ngram if policy == "ngram" else (lambda: replay.Lookup(7, 2, DECODE, 1))

    def ms(replies, make, slots=1):
        costs = replay.Costs(DECODE, 1.0, RoundCosts(in_run=1.0, in_run_per_doubling=0.0, start=0.0, after=0.4,
                                                     after_per_doubling=0.0))
        return sum(replay.run(replies, slots, 7, make, costs)), costs

    plain_loop, _ = ms([LOOP], replay.Plain)
    assert plain_loop == pytest.approx(len(LOOP["reply"]) - 1)   # one plain step a token after the first
    loop, costs = ms([LOOP], make)
    assert loop < plain_loop / 2 and costs.accepted / costs.rounds > 5   # most of it drafted, 8 tokens a round
    fresh, costs = ms([FRESH], make)
    assert fresh == ms([FRESH], replay.Plain)[0] and costs.rounds == 0    # no match: every step plain
    both, costs = ms([LOOP, LOOP], make, slots=2)    # two at once: rounds for both
    assert both < ms([LOOP, LOOP], replay.Plain, slots=2)[0] / 2 and costs.accepted / costs.rounds > 10


def test_the_script_prints_a_row_per_policy_and_load(benchmark_script, tmp_path, monkeypatch, capsys) -> None:
    replay = benchmark_script("lookup_replay")
    (tmp_path / "replies.json").write_text(json.dumps({"replies": [LOOP, FRESH, FRESH, LOOP] * 2}))
    DECODE.save(tmp_path / "sps.json")
    monkeypatch.setattr(sys, "argv", ["lookup_replay.py", "--replies", str(tmp_path / "replies.json"),
                                      "--profiles", str(tmp_path), "--concurrency", "1", "2",
                                      "--lookup", "2", "4", "--check-every", "1", "8"])
    replay.main()
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 1 |") or
            line.startswith("| 2 |")]
    assert len(rows) == 10 and all(float(row.split("|")[4]) > 1.0 for row in rows)
    monkeypatch.setattr(sys, "argv", sys.argv[:-6] + ["--concurrency", "2", "--batch-form", "--no-tail"])
    replay.main()
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| 2 |")]
    assert len(rows) == 3 and "; 1 x C a call;" in out   # calls of 2 replies, not 8
    assert rows[2].split("|")[2].strip().endswith(", no tail)")   # each lookup row again without tail weights


def test_the_charged_costs_are_the_round_costs(benchmark_script) -> None:
    """A round after a plain step costs `start` more than one in a run; the plain step after a run
    costs `saving` less."""
    replay = benchmark_script("lookup_replay")
    costs = replay.Costs(DECODE, 2.0, RoundCosts(in_run=0.5, in_run_per_doubling=0.0, start=1.0, after=0.25,
                                                 after_per_doubling=0.0))
    for drafted in (True, True, False, False):
        costs.step(1, drafted)
    assert costs.ms == pytest.approx(2.0 * ((1 + 1.5) + (1 + 0.5) + (1 - 0.25) + 1))
    with pytest.raises(ValueError, match="IN:START:AFTER"):
        replay._costs("1:2")   # (main turns it into a usage error naming --priced)



def test_searches_are_charged_and_the_budget_searches_fewer(benchmark_script, tmp_path, monkeypatch,
                                                            capsys) -> None:
    """`--search-ms` (session 54): host ms per request the wrapper searched; `--search-budget`."""
    replay = benchmark_script("lookup_replay")

    def ms(search_ms, budget, slots=2):
        costs = replay.Costs(DECODE, 1.0, RoundCosts(in_run=1.0, in_run_per_doubling=0.0, start=0.0, after=0.4,
                                                     after_per_doubling=0.0), search_ms)
        policies = []

        def make():
            policies.append(replay.Lookup(7, 2, DECODE, 1, search_budget=budget))
            return policies[-1]
        return sum(replay.run([FRESH, FRESH], slots, 7, make, costs)), costs

    free, _ = ms(0.0, float("inf"))
    assert free == ms(0.0, float("inf"))[0] and ms(0.0, 0.5)[0] == free   # fresh text: no rounds either way
    steps = len(FRESH["reply"]) - 1
    charged, _ = ms(0.5, float("inf"))
    assert charged == pytest.approx(free + 0.5 * 2 * steps, rel=0.05)   # both requests searched every step
    fewer, _ = ms(0.5, 0.5)                                             # each every 4 tokens at 2 requests
    assert free < fewer < charged and fewer == pytest.approx(free + 0.5 * 2 * steps / 4, rel=0.1)
    fresh3 = [FRESH, {**FRESH, "prompt": [9, 10, 11, 12]}, {**FRESH, "prompt": [13, 14, 15, 16]}]
    costs = replay.Costs(DECODE, 1.0, RoundCosts(in_run=1.0, in_run_per_doubling=0.0, start=0.0, after=0.4,
                                                 after_per_doubling=0.0), 1.0)
    queued = sum(replay.run(fresh3, 2, 7, lambda: replay.Lookup(7, 2, DECODE, 1, search_budget=float("inf")), costs))
    plain = sum(replay.run(fresh3, 2, 7, replay.Plain, replay.Costs(DECODE, 1.0, costs.charged)))
    assert queued - plain == pytest.approx(3 * steps, rel=0.05)   # the one waiting is tracked, not searched
    (tmp_path / "replies.json").write_text(json.dumps({"replies": [LOOP, FRESH] * 2}))
    DECODE.save(tmp_path / "sps.json")
    monkeypatch.setattr(sys, "argv", ["lookup_replay.py", "--replies", str(tmp_path / "replies.json"),
                                      "--profiles", str(tmp_path), "--search-ms", "0.1", "--search-budget", "inf",
                                      "0.5"])
    replay.main()
    out = capsys.readouterr().out
    assert "0.1 ms a request searched" in out and "budget inf" in out and "budget 0.5" in out
    for bad in (["--search-ms", "-1"], ["--search-budget", "0"]):
        monkeypatch.setattr(sys, "argv", sys.argv[:5] + bad)
        with pytest.raises(SystemExit):
            replay.main()
