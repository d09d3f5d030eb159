# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Traced calls that drafted against the baseline's same call, phase by phase, from
`bench_dspark.py --step-log` logs.

A call of a speculative engine is paired with the baseline engine's call of the same log (one
process), concurrency and round (the same prompt set): its realized ratio is the baseline's summed
step ms over its own (over 1: faster). Step sums, not `call_ms`: the step log's harness costs a
speculative engine's call more than plain decoding's (session 64 on the H100: 5.1-5.3 against
3.5 ms a call at 8 requests), which is the trace's cost, not the engine's. Each call's steps are
split by phase: drafted (every step not logged `plain`: drafted, with a flush, prompt lookup) with
more than one request running (`Dn`) or one (`D1`: a draining batch's last request), and plain
steps likewise (`Pn`, `P1`), each with its ms and emitted tokens; `flush` counts the steps
logged with a flush and their largest ms. Per (concurrency, engine): the calls that drafted and
those that did not, with the geometric mean of their realized ratios, and the D1 steps' ms over
what the baseline's median decode step at its fewest running requests would take for their
tokens (the tail's loss in ms a drafted call).

Session 64 read it on the H100 at 8 requests (run34, five processes): every traced call of the
default that drafted (16 calls) ran below plain decoding's same call (0.68-0.995, mean 0.883),
the calls that drafted nothing at ~1.0.

`--budget` splits each drafted call's loss in ms against its baseline call exactly (`budget`): the
prefill step's difference (a call's first); the drafted steps (every later step that drafted or verified)
against the baseline's mean decode step times the steps they stand for (the baseline's decode steps
less the call's plain ones: the steps drafted and the steps saved), with their realized gain (that
plain time over theirs); the plain steps that kept the target features, and those that did not,
each against the same mean step. Session 76 read it over every run34 process of sessions 63-75 at 8
requests on an H100 (152 drafted calls of the default against plain decoding again): +8.1 ms a
drafted call, the drafted steps realizing 0.83 of plain decoding where the pause policy had judged
the rounds 0.944 (openings) and 0.984 (bodies) on average (`judged_rounds.py`), the calls that
drafted nothing -0.1 ms.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/drafted_calls.py STEPS.jsonl.xz [...] [--concurrency 8]
        [--baseline none] [--calls] [--budget]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
from judged_rounds import plain_steps  # noqa: E402
from step_log_report import load  # noqa: E402

PHASES = ("Dn", "D1", "Pn", "P1")


def phase(row: dict) -> str:
    """`D` for a step that drafted or verified a lookup, `P` for a plain one; `1` with one request
    running, `n` with more (a call's prefill step, nothing running yet, counts as `Pn`)."""
    return ("P" if row["kind"] == "plain" else "D") + ("1" if row["running"] == 1 else "n")


def drafted_calls(logs: list[list[dict]], baseline: str = "none") -> list[dict]:
    """One dict per traced call of an engine other than `baseline` whose baseline call (same log,
    concurrency, round) was traced: `log` (index), `engine`, `concurrency`, `round`, `ms` / `base_ms`
    (summed step ms), `realized` (base_ms / ms), `drafted` (steps not logged `plain`), per phase
    (`PHASES`) `ms` and `tokens`, `flushes` and `flush_ms` (largest), and `tail_loss` (the D1
    steps' ms over the baseline's median decode step times their tokens: its median at the fewest
    requests it ran at that concurrency, over every call of the log, as plain decoding's batches
    rarely drain to one request; 0 without any)."""
    out = []
    for index, rows in enumerate(logs):
        calls: dict[tuple, list[dict]] = defaultdict(list)
        for row in rows:
            calls[(row["engine"], row["concurrency"], row["round"])].append(row)
        plain = plain_steps(rows, baseline)
        for (engine, concurrency, rnd), steps in sorted(calls.items()):
            base = calls.get((baseline, concurrency, rnd))
            if engine == baseline or not base:
                continue
            medians = plain.get(concurrency)
            lone_ms = medians[min(medians)] if medians else 0.0
            ms, base_ms = sum(r["ms"] for r in steps), sum(r["ms"] for r in base)
            cell = {"log": index, "engine": engine, "concurrency": concurrency, "round": rnd, "ms": ms,
                    "base_ms": base_ms, "realized": base_ms / ms,
                    "drafted": sum(r["kind"] != "plain" for r in steps),
                    "ms_by": dict.fromkeys(PHASES, 0.0), "tokens_by": dict.fromkeys(PHASES, 0)}
            for row in steps:
                cell["ms_by"][phase(row)] += row["ms"]
                cell["tokens_by"][phase(row)] += row["emitted"]
            flushes = [r["ms"] for r in steps if "flush" in r["kind"]]
            cell["flushes"], cell["flush_ms"] = len(flushes), max(flushes, default=0.0)
            cell["tail_loss"] = cell["ms_by"]["D1"] - lone_ms * cell["tokens_by"]["D1"] if lone_ms else 0.0
            cell["budget"] = budget(steps, base)
            out.append(cell)
    return out


BUDGET = ("prefill", "drafted", "plain_features", "plain_other")


def budget(steps: list[dict], base: list[dict]) -> dict[str, float]:
    """A call's ms over its baseline call's (each a call's steps in order, the first its prefill),
    split exactly (the parts add up to `loss`): `prefill` (the first step's ms less the baseline's),
    `drafted` (the later steps that drafted or verified drafts, less the baseline's mean decode
    step `mean_ms` times the steps they stand for: the baseline's decode steps less the call's
    plain ones), `plain_features` / `plain_other` (the
    plain steps that kept the target features / the others, each less `mean_ms` a step); also
    `realized` (that stood-for time over the drafted steps' ms; None without drafted steps) and the
    counts `drafted_steps`, `plain_steps`, `base_steps` (and `stood_for`, `drafted_ms`).

    Raises:
        ValueError: a call without steps or a baseline without decode steps.
    """
    if not steps or len(base) < 2:
        raise ValueError("budget: each call needs its first step and the baseline decode steps")
    first, later, base_first, decode = steps[:1], steps[1:], base[:1], base[1:]
    mean_ms = sum(r["ms"] for r in decode) / len(decode)
    drafted = [r for r in later if r["kind"] != "plain" or r.get("verified", 0) > 0]
    plain = [r for r in later if r["kind"] == "plain" and not r.get("verified", 0) > 0]
    stood_for = mean_ms * (len(decode) - len(plain))
    drafted_ms = sum(r["ms"] for r in drafted)
    out = {"prefill": sum(r["ms"] for r in first) - sum(r["ms"] for r in base_first),
           "drafted": drafted_ms - stood_for,
           "plain_features": sum(r["ms"] - mean_ms for r in plain if r.get("features")),
           "plain_other": sum(r["ms"] - mean_ms for r in plain if not r.get("features")),
           "realized": stood_for / drafted_ms if drafted_ms > 0 else None,
           "stood_for": stood_for, "drafted_ms": drafted_ms,
           "drafted_steps": len(drafted), "plain_steps": len(plain), "base_steps": len(decode)}
    out["loss"] = sum(out[k] for k in BUDGET)
    return out


def budget_rows(calls: list[dict]) -> list[dict]:
    """Per (concurrency, engine) with calls that drafted: `calls` (those), the mean of each `budget`
    part and of `loss` over them (ms a call), `realized` (their drafted steps' summed stood-for time
    over their summed ms) and `quiet_loss` (the mean loss of the calls that drafted nothing; None
    without any)."""
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for call in calls:
        cells[(call["concurrency"], call["engine"])].append(call["budget"])
    out = []
    for (concurrency, engine), group in sorted(cells.items()):
        drafted = [b for b in group if b["drafted_steps"]]
        quiet = [b["loss"] for b in group if not b["drafted_steps"]]
        if not drafted:
            continue
        row = {"concurrency": concurrency, "engine": engine, "calls": len(drafted),
               "quiet_loss": statistics.fmean(quiet) if quiet else None,
               "realized": sum(b["stood_for"] for b in drafted) / sum(b["drafted_ms"] for b in drafted)}
        for key in (*BUDGET, "loss"):
            row[key] = statistics.fmean(b[key] for b in drafted)
        out.append(row)
    return out


def summary(calls: list[dict]) -> list[dict]:
    """Per (concurrency, engine): `drafted` / `plain` (calls that drafted / did not), the geometric
    means of their realized ratios (`realized_drafted`, `realized_plain`; None without calls),
    `tail_loss` (mean over the calls that drafted) and `flushes` (their total)."""
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for call in calls:
        cells[(call["concurrency"], call["engine"])].append(call)

    def geomean(values: list[float]) -> float | None:
        return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None

    out = []
    for (concurrency, engine), group in sorted(cells.items()):
        drafted = [c for c in group if c["drafted"]]
        plain = [c for c in group if not c["drafted"]]
        out.append({"concurrency": concurrency, "engine": engine, "drafted": len(drafted), "plain": len(plain),
                    "realized_drafted": geomean([c["realized"] for c in drafted]),
                    "realized_plain": geomean([c["realized"] for c in plain]),
                    "tail_loss": statistics.fmean(c["tail_loss"] for c in drafted) if drafted else 0.0,
                    "flushes": sum(c["flushes"] for c in drafted)})
    return out


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path, help="step logs (.jsonl, .jsonl.xz or .jsonl.gz)")
    parser.add_argument("--concurrency", type=int, nargs="*", help="only these concurrencies")
    parser.add_argument("--baseline", default="none", help="the engine each call is paired with")
    parser.add_argument("--calls", action="store_true", help="also one row per call that drafted")
    parser.add_argument("--budget", action="store_true",
                        help="also the drafted calls' loss split by part (`budget`), ms a call")
    args = parser.parse_args()
    calls = drafted_calls([load(path) for path in args.logs], args.baseline)
    if args.concurrency:
        calls = [c for c in calls if c["concurrency"] in args.concurrency]
    print("| requests | engine | calls drafted | realized (drafted) | calls plain | realized (plain) "
          "| tail loss ms a drafted call | flushes |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for row in summary(calls):
        print(f"| {row['concurrency']} | {row['engine']} | {row['drafted']} | {_ratio(row['realized_drafted'])} "
              f"| {row['plain']} | {_ratio(row['realized_plain'])} | {row['tail_loss']:.1f} | {row['flushes']} |")
    if args.budget:
        print("\n| requests | engine | drafted calls | loss ms a call | prefill | drafted steps (realized) "
              "| plain steps keeping features | other plain steps | calls that drafted nothing: loss ms |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for row in budget_rows(calls):
            quiet = "-" if row["quiet_loss"] is None else f"{row['quiet_loss']:+.2f}"
            print(f"| {row['concurrency']} | {row['engine']} | {row['calls']} | {row['loss']:+.2f} "
                  f"| {row['prefill']:+.2f} | {row['drafted']:+.2f} ({row['realized']:.3f}) "
                  f"| {row['plain_features']:+.2f} | {row['plain_other']:+.2f} | {quiet} |")
    if args.calls:
        print("\n| log | requests | engine | round | realized | drafted | "
              + " | ".join(f"{p} ms/tokens" for p in PHASES) + " | flushes (largest ms) |")
        print("|---:|---:|---|---:|---:|---:|" + "---|" * len(PHASES) + "---|")
        for c in calls:
            if c["drafted"]:
                phases = " | ".join(f"{c['ms_by'][p]:.1f}/{c['tokens_by'][p]}" for p in PHASES)
                print(f"| {c['log']} | {c['concurrency']} | {c['engine']} | {c['round']} | {c['realized']:.3f} "
                      f"| {c['drafted']} | {phases} | {c['flushes']} ({c['flush_ms']:.1f}) |")


if __name__ == "__main__":
    main()
