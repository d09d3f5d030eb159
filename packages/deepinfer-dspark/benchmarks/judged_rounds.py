# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Drafted rounds as the pause policy judged them against what they realized, from
`bench_dspark.py --step-log --step-log-ledger` logs.

In the asynchronous engine a step logged as drafted (`drafted`, `drafted+flush`, ...) ran the
proposer and verified drafts in the same step (a run's first drafted step drafts twice, for itself
and for the next), and the step after a run's last drafted step verifies its last drafts (a step
logged `plain` with `verified` > 0). A run is those steps together. Its realized gain is what its
steps emitted per running request, each priced in the baseline engine's median decode step
without prefill at that running count (`none` by default; the nearest count where it has none,
the smaller on a tie), over the run's ms: time-weighted, over 1 where the run emitted more per
ms than plain decoding at those loads; apart, too, for the runs' steps taken in the batch's
opening (the least advanced request, the step log's `reply`, within its first 32 tokens) and the
others (a run's first step, which drafts twice, falls in the phase the run began in). It counts
the mean request's tokens, not the straggler's, so it is an upper bound on what a draining batch
keeps, and it moves with the baseline (the engines of one process differ as a whole by a few
percent: price against `none-again` too).
The judged gain and ratio are `PausePolicy.judged`'s (expected accepted drafts priced at the
rounds' measured time, the straggler's share where `judge_stragglers` applies; logged in the
step that ran the judgement, one round late with `overlap_bookkeeping`), every one logged,
split by whether the round was judged as a reply's opening (`OpeningPhase`). `round_time` is the
measured rounds' correction over the profile. Session 63 read it on the H100 at 8 requests
(run34): openings judged at 1.00 on average where the runs realized ~0.87.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/judged_rounds.py LOG [LOG ...] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
from step_log_report import load  # noqa: E402

OPENING = 32   # `opening_phase.OPENING_TOKENS`: a step before its least advanced request's 32nd token


def plain_steps(rows: list[dict], baseline: str) -> dict[int, dict[int, float]]:
    """concurrency -> running requests -> the median ms of `baseline`'s decode steps there."""
    times: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row["engine"] == baseline and row["kind"] == "plain" and not row["prefill_tokens"] and row["running"]:
            times[row["concurrency"]][row["running"]].append(row["ms"])
    return {c: {n: statistics.median(v) for n, v in by.items()} for c, by in times.items()}


def _nearest(medians: dict[int, float], running: int) -> float:
    """The median at `running`, else at the nearest running count (the smaller on a tie)."""
    return medians[min(medians, key=lambda n: (abs(n - running), n))]


def judged_rounds(logs: list[list[dict]], baseline: str = "none") -> list[dict]:
    """One dict per (concurrency, engine) that drafted or judged, over every log: `rounds`
    (drafted steps in runs priced), `realized` (time-weighted realized gain of those runs; None
    without the baseline's decode steps at that concurrency), `realized_opening` / `realized_body`
    (the same over the runs' steps taken while the least advanced request was within its reply's
    first `OPENING` tokens, and over the others), `opening` / `body` (judgements
    logged: count and mean judged gain), `ratio` (mean judged ratio), `round_ms` (median ms of a
    drafted step inside a run, not a run's first), `correction` (median `round_time` of the
    drafted steps; None for an engine that logged no judgement, e.g. fixed k) and `straggler` (mean
    straggler factor of the body judgements, `judge_stragglers`; None where the log has none)."""
    found: dict[tuple[int, str], dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for rows in logs:
        plain = plain_steps(rows, baseline)
        calls: dict[tuple, list[dict]] = defaultdict(list)
        for row in rows:
            calls[(row["engine"], row["concurrency"], row["round"])].append(row)
        for (engine, concurrency, _), steps in calls.items():
            medians, cell = plain.get(concurrency), found[(concurrency, engine)]
            run: list[dict] = []
            for i, row in enumerate(steps):
                if row.get("judged"):
                    opening, _, _, ratio, gain = row["judged"]
                    cell["opening" if opening else "body"].append(gain)
                    cell["ratio"].append(ratio)
                    if not opening and row.get("straggler") is not None:   # (logged since session 69)
                        cell["straggler"].append(row["straggler"])
                if row.get("round_time") is not None and row["kind"].startswith("drafted"):
                    cell["correction"].append(row["round_time"])
                if row["kind"].startswith("drafted"):
                    if run:
                        cell["round_ms"].append(row["ms"])
                    run.append(row)
                    if i + 1 < len(steps):
                        continue
                elif run and row["verified"] and row["running"]:
                    run.append(row)   # the step that verifies the run's last drafts
                if run and medians:
                    cell["drafted"].append(sum(r["kind"].startswith("drafted") for r in run))
                    for r in (r for r in run if r["running"]):
                        phase = "opening" if r.get("reply", OPENING) < OPENING else "body"
                        cell[f"plain_ms {phase}"].append(r["emitted"] / r["running"] * _nearest(medians, r["running"]))
                        cell[f"run_ms {phase}"].append(r["ms"])
                run = []
    out = []
    for (concurrency, engine), cell in sorted(found.items()):
        if not cell["drafted"] and not cell["opening"] and not cell["body"]:
            continue

        def mean(key):
            return statistics.mean(cell[key]) if cell[key] else None

        def median(key):
            return statistics.median(cell[key]) if cell[key] else None
        def realized(*phases):
            spent = sum(sum(cell[f"run_ms {p}"]) for p in phases)
            return sum(sum(cell[f"plain_ms {p}"]) for p in phases) / spent if spent > 0 else None
        out.append({"concurrency": concurrency, "engine": engine, "rounds": sum(cell["drafted"]),
                    "realized": realized("opening", "body"), "realized_opening": realized("opening"),
                    "realized_body": realized("body"), "opening": (len(cell["opening"]), mean("opening")),
                    "body": (len(cell["body"]), mean("body")), "ratio": mean("ratio"),
                    "round_ms": median("round_ms"), "straggler": mean("straggler"),
                    "correction": median("correction") if cell["opening"] or cell["body"] else None})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", help="steps.jsonl, .jsonl.xz or .jsonl.gz from bench_dspark.py --step-log")
    parser.add_argument("--concurrency", type=int, nargs="*", help="only these concurrencies")
    parser.add_argument("--baseline", default="none", help="the engine whose decode steps price plain decoding")
    args = parser.parse_args()
    rows = judged_rounds([load(Path(p)) for p in args.logs], args.baseline)

    def num(value, digits=3):
        return "-" if value is None else f"{value:.{digits}f}"
    print("| requests | engine | rounds | realized gain (openings / bodies) | judged openings (gain) "
          "| judged bodies (gain) | judged ratio | drafted step ms | correction | straggler factor (bodies) |")
    print("|---:|---|---:|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        if args.concurrency and r["concurrency"] not in args.concurrency:
            continue
        print(f"| {r['concurrency']} | {r['engine']} | {r['rounds']} | {num(r['realized'])} "
              f"({num(r['realized_opening'])} / {num(r['realized_body'])}) "
              f"| {r['opening'][0]} ({num(r['opening'][1])}) | {r['body'][0]} ({num(r['body'][1])}) "
              f"| {num(r['ratio'])} | {num(r['round_ms'], 2)} | {num(r['correction'])} | {num(r['straggler'])} |")


if __name__ == "__main__":
    main()
