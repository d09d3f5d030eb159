# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What resuming drafting costs, from `bench_dspark.py --step-log` logs.

A resumption is a drafted round (`drafted`, `drafted+flush`, ...; not a prompt-lookup round) that
follows a plain decode step (no prefill tokens) in the same call. The asynchronous engine pays for
it in three steps: the quiet stretch's last step (with `pre_flush`, where the buffered features
are projected; `stretch` "q" in the log), the step asked one by one before the round (the proposer
waits for the token ids), and the round itself (with the flush when nothing projected it before:
`drafted+flush`). Per (concurrency, engine), over every traced call of every log given: the
resumptions, how many flushed in the round, and the mean ms of the round, of the step before it,
of the step two before (and how many of those were quiet) and of the three together; and, for
scale, the mean ms of a drafted round that follows a drafted round (inside a run). Session 62 read
it by hand on the H100 (`pre_flush` against the default before it, run33): 9.0 against 10.6 ms
for the three steps at 8 requests.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/resumptions.py LOG [LOG ...] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
from step_log_report import load  # noqa: E402


def resumptions(logs: list[list[dict]]) -> list[dict]:
    """One dict per (concurrency, engine) that resumed drafting at least once or drafted at all:
    `resumed`, `flushed` (rounds of kind `drafted+flush` among them), `round_ms`, `before_ms`,
    `before2_ms`, `quiet_before2` (steps two before that were quiet), `three_ms` (means; None
    without resumptions) and `in_run_ms` (None without a round inside a run). Each log's rows
    are grouped into calls by (engine, concurrency, round), in their order."""
    calls: dict[tuple, list[dict]] = defaultdict(list)
    for number, rows in enumerate(logs):
        for row in rows:
            calls[(number, row["engine"], row["concurrency"], row["round"])].append(row)
    found: dict[tuple[int, str], list[tuple]] = defaultdict(list)
    in_run: dict[tuple[int, str], list[float]] = defaultdict(list)
    for (_, engine, concurrency, _), steps in calls.items():
        for i in range(1, len(steps)):
            row, before = steps[i], steps[i - 1]
            if not row["kind"].startswith("drafted"):
                continue
            if before["kind"].startswith("drafted"):
                in_run[(concurrency, engine)].append(row["ms"])
            elif before["kind"] == "plain" and not before["prefill_tokens"] and i >= 2:
                found[(concurrency, engine)].append((row, before, steps[i - 2]))
    out = []
    for key in sorted(set(found) | set(in_run)):
        events = found.get(key, [])

        def mean(values):
            values = list(values)
            return statistics.mean(values) if values else None
        out.append({"concurrency": key[0], "engine": key[1], "resumed": len(events),
                    "flushed": sum(r["kind"] == "drafted+flush" for r, _, _ in events),
                    "round_ms": mean(r["ms"] for r, _, _ in events),
                    "before_ms": mean(b["ms"] for _, b, _ in events),
                    "before2_ms": mean(b2["ms"] for _, _, b2 in events),
                    "quiet_before2": sum(b2.get("stretch") == "q" for _, _, b2 in events),
                    "three_ms": mean(r["ms"] + b["ms"] + b2["ms"] for r, b, b2 in events),
                    "in_run_ms": mean(in_run.get(key, []))})
    return out


def table(rows: list[dict]) -> str:
    """Markdown: one line per (concurrency, engine)."""
    def cell(value):
        return "-" if value is None else f"{value:.2f}"
    lines = ["| requests | engine | resumed (flushed) | round ms | step before | two before (quiet) | three steps "
             "| a round inside a run |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['concurrency']} | {r['engine']} | {r['resumed']} ({r['flushed']}) | {cell(r['round_ms'])} "
                     f"| {cell(r['before_ms'])} | {cell(r['before2_ms'])} ({r['quiet_before2']}) "
                     f"| {cell(r['three_ms'])} | {cell(r['in_run_ms'])} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path, help="steps.jsonl, .jsonl.xz or .jsonl.gz from bench_dspark.py")
    parser.add_argument("--concurrency", type=int, nargs="*", default=None, help="only these concurrencies")
    args = parser.parse_args()
    rows = resumptions([load(path) for path in args.logs])
    if args.concurrency:
        rows = [r for r in rows if r["concurrency"] in args.concurrency]
    print(table(rows))


if __name__ == "__main__":
    main()
