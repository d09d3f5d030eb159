# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""How far drafted steps move a batch's least advanced request, against the mean request, from
`bench_dspark.py --step-log` logs (`Frontier`, `judge_frontier`).

A step log's `reply` is the least advanced running request's output length as the step begins.
For a drafted step (`drafted`, `drafted+flush`) followed by a step of the same call at the same
running count (no request finished in between), the frontier moved `reply` (next) - `reply`
tokens, the mean request `emitted` / `running`. Per (concurrency, engine, running requests): the
steps, the two means, their ratio (sum over sum: what a draining batch whose least advanced
request ends last keeps of the mean request's tokens), the drafted steps' median ms, the baseline's
median plain decode step there (`none`), and the speed of each over plain decoding's one token a
plain step (tokens / drafted ms * plain ms); with the default's logged straggler factor beside it
(`straggler`, logs from session 69 on; its mean over the steps that carry one).

Session 80 read it over the issue table's traced rounds at 8 requests (`run2-table/out-*-low`):
fixed-7's frontier kept 0.57 (H100, nine runs) and 0.51 (H200) of the mean request at 8 running,
0.64-0.65 at 5-7 and 0.82 at 4 (H100), 0.99 at 1 request; its speed at 8 running 0.66 / 0.59 of
plain decoding's where the mean request's read 1.17 / 1.16. The default's drafted steps at 8 in
run34 (H100, sessions 75-80): 0.45-0.86 at 5-8 running, its straggler factor 0.82-0.86 there.

`--runs` prints the drafted runs instead (consecutive drafted steps of one call, followed by a step of
that call): by length (1-7 steps, 8 or more), the runs, the frontier's move over the run (`reply` at the
step after it less at its first) over the mean request's tokens summed over its steps, and the median
running count at its start. Session 80: the default's runs at 8 on the H100 (sessions 75-80, 52 runs)
kept 0.31-0.57 of the mean request over 1-7 steps, 0.76 over 8 or more (`Frontier` files runs whole).

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/frontier_share.py STEPS.jsonl.xz [...] [--engine fixed-7]
        [--concurrency 8] [--baseline none] [--min-steps 5] [--runs]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
from step_log_report import load  # noqa: E402


def frontier_share(logs: list[list[dict]], baseline: str = "none") -> list[dict]:
    """One dict per (concurrency, engine, running) with a drafted step followed by one at the same
    count: `steps`, `frontier` and `mean` (tokens a step, means), `ratio` (their sums' ratio),
    `ms` (the drafted steps' median), `plain_ms` (the baseline's median decode step at that
    concurrency and running count, None without one), `frontier_speed`, `mean_speed` (over plain
    decoding; None without `plain_ms`) and `straggler` (the logged factors' mean, None without)."""
    moves: dict[tuple, list[tuple]] = defaultdict(list)
    plain: dict[tuple, list[float]] = defaultdict(list)
    for rows in logs:
        for i, row in enumerate(rows):
            if row["engine"] == baseline and row["kind"] == "plain" and not row["prefill_tokens"] and row["running"]:
                plain[(row["concurrency"], row["running"])].append(row["ms"])
            if not row["kind"].startswith("drafted") or i + 1 == len(rows) or not row["running"]:
                continue
            after = rows[i + 1]
            if (after["engine"], after["concurrency"], after["round"], after["running"]) != \
                    (row["engine"], row["concurrency"], row["round"], row["running"]):
                continue
            moves[(row["concurrency"], row["engine"], row["running"])].append(
                (after["reply"] - row["reply"], row["emitted"] / row["running"], row["ms"], row.get("straggler")))
    out = []
    for (concurrency, engine, running), steps in sorted(moves.items()):
        front, mean = sum(s[0] for s in steps), sum(s[1] for s in steps)
        ms = statistics.median(s[2] for s in steps)
        base = plain.get((concurrency, running))
        plain_ms = statistics.median(base) if base else None
        factors = [s[3] for s in steps if s[3] is not None]
        speed = (lambda tokens: tokens / len(steps) / ms * plain_ms) if plain_ms else (lambda tokens: None)
        out.append(dict(concurrency=concurrency, engine=engine, running=running, steps=len(steps),
                        frontier=front / len(steps), mean=mean / len(steps), ratio=front / mean if mean else None,
                        ms=ms, plain_ms=plain_ms, frontier_speed=speed(front), mean_speed=speed(mean),
                        straggler=statistics.fmean(factors) if factors else None))
    return out


def drafted_runs(logs: list[list[dict]]) -> list[dict]:
    """One dict per (concurrency, engine, run length: 1-7, 8 for 8 or more) with a drafted run followed
    by a step of its call: `runs`, `ratio` (the frontier's moves over the mean request's tokens, sums
    over the runs) and `running` (the median running count at the runs' first steps)."""
    runs: dict[tuple, list[tuple]] = defaultdict(list)
    for rows in logs:
        i = 0
        while i < len(rows):
            first = rows[i]
            if not first["kind"].startswith("drafted") or not first["running"]:
                i += 1
                continue
            call = (first["engine"], first["concurrency"], first["round"])
            j = i
            while j + 1 < len(rows) and rows[j + 1]["kind"].startswith("drafted") \
                    and (rows[j + 1]["engine"], rows[j + 1]["concurrency"], rows[j + 1]["round"]) == call:
                j += 1
            if j + 1 < len(rows) and (rows[j + 1]["engine"], rows[j + 1]["concurrency"], rows[j + 1]["round"]) == call:
                mean = sum(rows[k]["emitted"] / rows[k]["running"] for k in range(i, j + 1) if rows[k]["running"])
                runs[(first["concurrency"], first["engine"], min(j - i + 1, 8))].append(
                    (rows[j + 1]["reply"] - first["reply"], mean, first["running"]))
            i = j + 1
    return [dict(concurrency=c, engine=e, length=n, runs=len(v),
                 ratio=sum(r[0] for r in v) / sum(r[1] for r in v) if sum(r[1] for r in v) else None,
                 running=statistics.median(r[2] for r in v)) for (c, e, n), v in sorted(runs.items())]


def _fmt(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path, help="bench_dspark.py --step-log files")
    parser.add_argument("--engine", nargs="*", default=None, help="engines to print (default: all that drafted)")
    parser.add_argument("--concurrency", type=int, nargs="*", default=None)
    parser.add_argument("--baseline", default="none")
    parser.add_argument("--min-steps", type=int, default=5, help="rows with fewer drafted steps are left out")
    parser.add_argument("--runs", action="store_true", help="the drafted runs by length instead")
    args = parser.parse_args()
    logs = [load(path) for path in args.logs]
    if args.runs:
        print("| requests | engine | run steps | runs | least advanced / mean request | running at its start |")
        print("|---:|---|---:|---:|---:|---:|")
        for r in drafted_runs(logs):
            if (args.engine and r["engine"] not in args.engine) or (args.concurrency and r["concurrency"] not in
                                                                    args.concurrency):
                continue
            length = "8+" if r["length"] == 8 else r["length"]
            print(f"| {r['concurrency']} | {r['engine']} | {length} | {r['runs']} | {_fmt(r['ratio'])} "
                  f"| {r['running']:g} |")
        return
    rows = frontier_share(logs, args.baseline)
    print("| requests | engine | running | steps | frontier tokens a step | mean request's | ratio | drafted ms "
          "| plain ms | frontier speed / plain | mean speed / plain | straggler factor |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if r["steps"] < args.min_steps or (args.engine and r["engine"] not in args.engine) \
                or (args.concurrency and r["concurrency"] not in args.concurrency):
            continue
        print(f"| {r['concurrency']} | {r['engine']} | {r['running']} | {r['steps']} | {r['frontier']:.2f} "
              f"| {r['mean']:.2f} | {_fmt(r['ratio'])} | {r['ms']:.2f} | {_fmt(r['plain_ms'])} "
              f"| {_fmt(r['frontier_speed'])} | {_fmt(r['mean_speed'])} | {_fmt(r['straggler'])} |")


if __name__ == "__main__":
    main()
