# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reads the ledger field `bound` of `bench_dspark.py --step-log --step-log-ledger` logs by requests
running: how near 1 the bounds' best round gain sits at each load, and how often the next step drafted.

`bound` (session 77, `engine_probes.py`) is the most a full drafted round could gain at the step's
bucket by the bounds (`BoundPauses._bound_gain`: the measured acceptance's upper bound as
`PausePolicy.expected_loss` reads it, `resume_bound` included): above 1 a round may be drafted there,
at or below 1 the bound rules the load out without drafting it. Per engine and running count n (the
requests running as the step began; prefill steps left out), over every given log (one per process):
the steps carrying a bound, its median and 90th percentile, the share above 1, and for the steps
above 1 and those at or below it the share whose next step in the same call was a DSpark round (kind
"drafted", with or without a flush, capture or eager draft; a prompt-lookup round is not the bound's).
The field is read after its step, at the bucket of the requests running before it, and with
asynchronous scheduling the next step's drafts may have been decided before that read, at another
count: "next step" places a bound beside what followed it, not the decision it made.
Session 78 read its sixteen H100 processes at 8 requests so: the default's bound at 8 running had
median 0.945, 12% of its steps above 1.

Usage:
    python3 packages/deepinfer-dspark/benchmarks/ledger_bounds.py out-*/steps.jsonl.xz --concurrency 8
        [--engines confidence confidence-resume-bound]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
from step_log_report import load  # noqa: E402


def bounds_by_running(rows: list[dict], concurrency: int) -> dict[tuple[str, int], dict]:
    """{(engine, running): {"steps", "median", "p90", "above", "drafted_above", "drafted_below"}} over
    the decode steps at `concurrency` that carry a finite numeric `bound` (shares in [0, 1]; "p90"
    by upper nearest rank: the largest bound of a cell of 10 steps or fewer; a `drafted_*` share is
    None where no step of that side has a next step in its call). Steps are read in step order per
    (engine, round): a call is a round (`paired_calls` runs one call an engine a round; `main`
    makes the rounds of several logs distinct).

    Raises:
        KeyError: a row of `concurrency` without "engine", "round", "step", "running" or "kind".
    """
    seen: dict[tuple[str, int], list[tuple[float, bool | None]]] = defaultdict(list)
    calls: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("concurrency") == concurrency:
            calls[(r["engine"], r["round"])].append(r)
    for (engine, _), steps in calls.items():
        steps.sort(key=lambda r: r["step"])
        for here, after in zip(steps, [*steps[1:], None]):
            bound = here.get("bound")
            if (here.get("prefill_tokens") or isinstance(bound, bool) or not isinstance(bound, (int, float))
                    or not math.isfinite(bound)):
                continue
            drafted = None if after is None else after["kind"].startswith("drafted")
            seen[(engine, here["running"])].append((float(bound), drafted))
    return {key: _cell(values) for key, values in seen.items()}


def _cell(values: list[tuple[float, bool | None]]) -> dict:
    bounds = sorted(b for b, _ in values)
    above = [d for b, d in values if b > 1 and d is not None]
    below = [d for b, d in values if b <= 1 and d is not None]
    return {"steps": len(bounds), "median": statistics.median(bounds),
            "p90": bounds[min(len(bounds) - 1, int(0.9 * len(bounds)))],
            "above": sum(b > 1 for b in bounds) / len(bounds),
            "drafted_above": sum(above) / len(above) if above else None,
            "drafted_below": sum(below) / len(below) if below else None}


def table(cells: dict[tuple[str, int], dict], engines: list[str]) -> list[str]:
    """Markdown rows: engine, running, steps, median, p90, share above 1, next step drafted."""
    lines = ["| engine | running | steps | median bound | p90 | above 1 | drafted next (above / at or below) |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for engine in engines:
        for (name, n), c in sorted(cells.items()):
            if name != engine:
                continue
            shares = " / ".join("-" if s is None else f"{s:.3f}" for s in (c["drafted_above"], c["drafted_below"]))
            lines.append(f"| {engine} | {n} | {c['steps']} | {c['median']:.3f} | {c['p90']:.3f} | "
                         f"{c['above']:.3f} | {shares} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", type=Path, nargs="+", help="steps.jsonl(.xz/.gz), one per process")
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--engines", nargs="+", default=None, help="default: every engine with a bound")
    args = parser.parse_args()
    for path in args.logs:
        if not path.is_file():
            parser.error(f"logs: no such file: {path}")
    rows = []
    for index, path in enumerate(args.logs):   # rounds renumbered so that two processes' calls stay apart
        rows += [{**r, "round": (index, r.get("round"))} for r in load(path)]
    cells = bounds_by_running(rows, args.concurrency)
    if not cells:
        parser.error(f"--concurrency: no step with a `bound` at {args.concurrency} (logs from session 77 on, "
                     "--step-log-ledger)")
    engines = args.engines or sorted({e for e, _ in cells})
    print("\n".join(table(cells, engines)))


if __name__ == "__main__":
    main()
