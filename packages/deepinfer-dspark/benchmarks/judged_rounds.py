# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Drafted rounds as the pause policy judged them against what they realized, from
`bench_dspark.py --step-log --step-log-ledger` logs.

For each drafted round (a step of kind `drafted`, `drafted+flush`, ...) followed by a step of the
same call, the realized gain is what the following step emitted per running request, in plain
decode steps of the baseline engine (`none`: the median ms of its decode steps without prefill at
that running count, the nearest count where it has none), over that step's ms: the step that
verifies the round's drafts (and, inside a run, drafts the next round). Over 1 a round emitted
more per ms than plain decoding at that load; the mean request's tokens, not the straggler's.
The judged gain and ratio are `PausePolicy.judged`'s (expected accepted drafts priced at the
rounds' measured time, the straggler's share where `judge_stragglers` applies; logged in the
step that ran the judgement, one round late with `overlap_bookkeeping`), split by whether the
round was judged as a reply's opening (`OpeningPhase`). `round_time` is the measured rounds'
correction over the profile. Session 63 read it by hand on the H100 at 8 requests (run34).

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


def plain_steps(rows: list[dict], baseline: str) -> dict[int, dict[int, float]]:
    """concurrency -> running requests -> the median ms of `baseline`'s decode steps there."""
    times: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row["engine"] == baseline and row["kind"] == "plain" and not row["prefill_tokens"] and row["running"]:
            times[row["concurrency"]][row["running"]].append(row["ms"])
    return {c: {n: statistics.median(v) for n, v in by.items()} for c, by in times.items()}


def judged_rounds(logs: list[list[dict]], baseline: str = "none") -> list[dict]:
    """One dict per (concurrency, engine) that drafted, over every log: `rounds`, `realized`
    (mean realized gain), `opening` / `body` (judgements logged: count and mean judged gain),
    `ratio` (mean judged ratio), `round_ms` and `correction` (medians; None where not logged).
    A log without `baseline` decode steps at a concurrency gives no rounds there."""
    found: dict[tuple[int, str], dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for rows in logs:
        plain = plain_steps(rows, baseline)
        calls: dict[tuple, list[dict]] = defaultdict(list)
        for row in rows:
            calls[(row["engine"], row["concurrency"], row["round"])].append(row)
        for (engine, concurrency, _), steps in calls.items():
            medians = plain.get(concurrency)
            for row, after in zip(steps, steps[1:]):
                cell = found[(concurrency, engine)]
                if row.get("judged"):
                    opening, _, _, ratio, gain = row["judged"]
                    cell["opening" if opening else "body"].append(gain)
                    cell["ratio"].append(ratio)
                if not row["kind"].startswith("drafted") or not after["running"] or not medians:
                    continue
                step = medians.get(after["running"]) or medians[min(medians, key=lambda n: abs(n - after["running"]))]
                cell["realized"].append(after["emitted"] / after["running"] * step / after["ms"])
                cell["round_ms"].append(after["ms"])
                if row.get("round_time") is not None:
                    cell["correction"].append(row["round_time"])
    out = []
    for (concurrency, engine), cell in sorted(found.items()):
        if not cell["realized"]:
            continue

        def mean(key):
            return statistics.mean(cell[key]) if cell[key] else None

        def median(key):
            return statistics.median(cell[key]) if cell[key] else None
        out.append({"concurrency": concurrency, "engine": engine, "rounds": len(cell["realized"]),
                    "realized": mean("realized"), "opening": (len(cell["opening"]), mean("opening")),
                    "body": (len(cell["body"]), mean("body")), "ratio": mean("ratio"),
                    "round_ms": median("round_ms"), "correction": median("correction")})
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
    print("| requests | engine | rounds | realized gain | judged openings (gain) | judged bodies (gain) "
          "| judged ratio | round ms | correction |")
    print("|---:|---|---:|---:|---|---|---:|---:|---:|")
    for r in rows:
        if args.concurrency and r["concurrency"] not in args.concurrency:
            continue
        print(f"| {r['concurrency']} | {r['engine']} | {r['rounds']} | {num(r['realized'])} "
              f"| {r['opening'][0]} ({num(r['opening'][1])}) | {r['body'][0]} ({num(r['body'][1])}) "
              f"| {num(r['ratio'])} | {num(r['round_ms'], 2)} | {num(r['correction'])} |")


if __name__ == "__main__":
    main()
