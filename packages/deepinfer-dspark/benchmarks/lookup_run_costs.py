# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What a prompt-lookup run cost in the step logs, against what `RoundCosts` prices it at.

`LookupAssist.pays` prices a lookup round by `RoundCosts` (`round_costs.py`): constants measured
on the H200 in session 30, in plain 1-request steps: a round after a plain step +1.58-2.07, one
extending a run +0.65-1.16, and the plain step after the run 0.27-0.49 cheaper than a plain step.
Session 83's traced H100 calls at 8 requests (prompt set 9, `run34/out-h100-s83-*`) read a run of
two lookup rounds at 4 running requests at 3.4 and 2.5 ms and the plain step after it at 2.3 ms,
where plain steps took ~1.07 ms: the step after the run cost more, not less.

For every run of consecutive `lookup` steps of a traced call (`bench_dspark.py --step-log`, the
engines' rows of `steps.jsonl[.xz]`), this reads the run's steps and the plain step after it, in
units of the same call's median plain step at the run's first running count (steps with prefill
excluded; that median stands for the decode profile, which is flat to ~10% from 1 to 8 rows on
both GPUs), and prints, per running count: the runs, their median measured extra steps (the run
and the step after, less one plain step each), and `RoundCosts`' price for the same run (`round`
for its first round and `round(in_run)` for the others, less `saving`: the overhead `pays` charges
beside the decode profile read at the batch plus the drafts, ~1.0 on these flat profiles). A
measured extra above the price says lookup rounds there are dearer than `pays` believes.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/lookup_run_costs.py \
        benchmarks/results/h200-2026-12-06/run34/out-h100-s83-*/steps.jsonl.xz [--concurrency 8]
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from deepinfer_dspark.round_costs import RoundCosts  # noqa: E402


def read_calls(path: Path) -> dict[tuple, list[dict]]:
    """(engine, concurrency, round) -> that call's step rows in step order."""
    opener = lzma.open if path.suffix == ".xz" else gzip.open if path.suffix == ".gz" else open
    calls: dict[tuple, list[dict]] = defaultdict(list)
    with opener(path, "rt") as f:
        for line in f:
            row = json.loads(line)
            calls[(row["engine"], row["concurrency"], row["round"])].append(row)
    for rows in calls.values():
        rows.sort(key=lambda r: r["step"])
    return calls


def lookup_runs(rows: list[dict]) -> list[tuple[int, int]]:
    """(first index, length) of each run of consecutive `lookup` steps between two plain steps
    (or the call's start and a plain step): a run after a DSpark round, which `pays` prices as
    extending a run, or before one, whose step is no plain step, is left out."""
    runs, i = [], 0
    while i < len(rows):
        if rows[i]["kind"] == "lookup":
            j = i
            while j < len(rows) and rows[j]["kind"] == "lookup":
                j += 1
            if j < len(rows) and rows[j]["kind"] == "plain" and (i == 0 or rows[i - 1]["kind"] == "plain"):
                runs.append((i, j - i))
            i = j
        else:
            i += 1
    return runs


def plain_medians(rows: list[dict], runs: list[tuple[int, int]]) -> dict[int, float]:
    """Running count -> the median ms of the call's plain decode steps (no prefill, not the step
    right after a run)."""
    after = {i + n for i, n in runs}
    by_running: dict[int, list[float]] = defaultdict(list)
    for k, r in enumerate(rows):
        if r["kind"] == "plain" and not r.get("prefill_tokens") and k not in after and r["running"] > 0:
            by_running[r["running"]].append(r["ms"])
    return {n: statistics.median(v) for n, v in by_running.items()}


def priced_extra(costs: RoundCosts, batch: int, length: int) -> float:
    """What `LookupAssist.pays` charges a run of `length` rounds at `batch`, in 1-request steps."""
    return costs.priced(batch, False) + (length - 1) * costs.priced(batch, True)


def measured(calls: dict[tuple, list[dict]], concurrency: set[int] | None) -> dict[int, list[tuple]]:
    """Running count -> (measured extra steps, run length, drafts verified) of each run; a run at a
    running count without plain steps in its call is measured in the median over the call's counts."""
    out: dict[int, list[tuple]] = defaultdict(list)
    for (_, conc, _), rows in calls.items():
        if concurrency and conc not in concurrency:
            continue
        runs = lookup_runs(rows)
        medians = plain_medians(rows, runs)
        for i, n in runs:
            batch = rows[i]["running"]
            step = medians.get(batch) or (statistics.median(medians.values()) if medians else None)
            if not step:
                continue
            spent = sum(r["ms"] for r in rows[i:i + n + 1]) / step
            out[batch].append((spent - (n + 1), n, sum(r["verified"] for r in rows[i:i + n])))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path, help="steps.jsonl[.xz|.gz] files")
    parser.add_argument("--concurrency", type=int, nargs="*", default=None, help="keep these calls only")
    args = parser.parse_args(argv)
    costs, pooled = RoundCosts(), defaultdict(list)
    for path in args.logs:
        if not path.is_file():
            parser.error(f"logs: no such file {path}")
        for batch, runs in measured(read_calls(path), set(args.concurrency or ())).items():
            pooled[batch] += runs
    print("| running | runs | mean rounds a run | median drafts a run | measured extra steps (median, IQR) "
          "| priced extra steps (median) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for batch in sorted(pooled):
        runs = pooled[batch]
        extra = sorted(e for e, _, _ in runs)
        q = statistics.quantiles(extra, n=4) if len(extra) > 1 else [extra[0]] * 3
        priced = statistics.median(priced_extra(costs, batch, n) for _, n, _ in runs)
        print(f"| {batch} | {len(runs)} | {statistics.mean(n for _, n, _ in runs):.2f} | "
              f"{statistics.median(v for _, _, v in runs):.0f} | {q[1]:.2f} ({q[0]:.2f}-{q[2]:.2f}) | {priced:.2f} |")


if __name__ == "__main__":
    main()
