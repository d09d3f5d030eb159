# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Where a speculative engine's loss against plain decoding goes, by kind of traced call, from
`bench_dspark.py --step-log` logs (with `--step-log-ledger` for the opening flag).

Each traced call of `--engine` is paired with `--baseline`'s same call (one process, concurrency and
round): its ratio is the baseline's summed step ms over its own (over 1: faster). Calls are classed by
what they drafted: nothing (`quiet`), prompt-lookup rounds (`lookup`), DSpark rounds judged in the
openings' ledger (`opening`) or the bodies' (`body`), joined with `+`. Per class: calls, geometric mean,
drafted steps a call and the sum of the log ratios (the classes' sums add up to the whole loss).

Then, over the calls that drafted nothing, the slow steps (above `--slow` ms) of each engine a call,
and the engine's by what changed in its ledger fields since the step before (`pause`, `gain`,
`opening_pause`, `features`): where a dormant engine's extra time sits. Session 72 read sessions 67-71's
31 processes at 8 requests on an H100 (dspark BENCHMARKS "sixty-eighth session").

With `--parts`, each class's extra time is also split by part of the call (`parts`): the engine's steps
of each part priced at the baseline call's mean step (the step that resolves a round counted with it),
and the steps the engine saved (the baseline's steps beyond the engine's count), as shares of all the
baseline's traced time. The parts add up to the engine's whole extra time. Session 81 read it at 8
requests on an H100 (dspark BENCHMARKS "seventy-seventh session").

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/loss_by_call_kind.py OUT/steps.jsonl.xz [...] \\
        [--concurrency 8] [--engine confidence] [--baseline none-again] [--slow 1.6] [--parts]
"""

from __future__ import annotations

import argparse
import collections
import json
import lzma
import math

FIELDS = ("pause", "gain", "opening_pause", "features")


def calls_of(path: str, concurrency: int) -> dict[tuple[str, int], list[dict]]:
    calls = collections.defaultdict(list)
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        for line in f:
            step = json.loads(line)
            if step["concurrency"] == concurrency:
                calls[(step["engine"], step["round"])].append(step)
    return calls


def kind(steps: list[dict]) -> str:
    kinds = set()
    for s in steps:
        if s["kind"] == "plain":
            continue
        judged = s.get("judged")
        kinds.add("lookup" if s["kind"] == "lookup" else ("opening" if judged[0] else "body") if judged else s["kind"])
    return "+".join(sorted(kinds)) or "quiet"


PARTS = ("drafted", "lookup", "features", "plain", "steps saved")


def part(step: dict, last_round: str | None = None) -> str:
    """A traced step's part of a call: a DSpark round (`drafted`, `drafted+flush`), a prompt-lookup
    round, a plain step that captured the drafter's features (`features` set), or another plain step.
    A plain step that verified drafts (`verified` > 0: with asynchronous scheduling the step after a
    run's last round resolves it) belongs to that round's part, `last_round` (the part of the call's
    latest round; None before any)."""
    if step["kind"] == "plain":
        if step.get("verified", 0) > 0 and last_round is not None:
            return last_round
        return "features" if step.get("features") else "plain"
    return "lookup" if step["kind"] == "lookup" else "drafted"


def parts(steps: list[dict], base: list[dict]) -> dict[str, float]:
    """The engine call's extra ms over the baseline call's, by part (`PARTS`, `part`): each part's
    summed ms less that many of the baseline's mean steps, and `steps saved` minus the baseline's mean
    step times the baseline's steps beyond the engine's count (negative where the engine ran fewer
    steps, positive where it ran more). The values add up to the engine's total ms less the
    baseline's. Raises ValueError for an empty baseline call."""
    if not base:
        raise ValueError("parts: the baseline call has no steps")
    mean = sum(s["ms"] for s in base) / len(base)
    out = dict.fromkeys(PARTS, 0.0)
    last_round = None
    for s in steps:
        name = part(s, last_round)
        if s["kind"] != "plain":
            last_round = name
        out[name] += s["ms"] - mean
    out["steps saved"] = -mean * (len(base) - len(steps))
    return out


def print_parts(split: dict[str, collections.Counter], base_ms: float) -> None:
    print("| calls of the class | " + " | ".join(PARTS) + " | all |")
    print("|---|" + "---:|" * (len(PARTS) + 1))
    for name, extra in sorted(split.items()):
        cells = [f"{100 * extra[p] / base_ms:+.2f}%" for p in PARTS]
        print(f"| {name} | " + " | ".join(cells) + f" | {100 * sum(extra.values()) / base_ms:+.2f}% |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--engine", default="confidence")
    parser.add_argument("--baseline", default="none-again")
    parser.add_argument("--slow", type=float, default=1.6, help="a step above this many ms is slow")
    parser.add_argument("--parts", action="store_true",
                        help="also split each class's extra time by part of the call (`parts`)")
    args = parser.parse_args()
    classes = collections.defaultdict(list)
    split, base_ms = collections.defaultdict(collections.Counter), 0.0
    slow, quiet_calls = collections.Counter(), collections.Counter()
    changed, changed_slow = collections.Counter(), collections.Counter()
    for path in args.logs:
        calls = calls_of(path, args.concurrency)
        for (engine, rnd), steps in calls.items():
            if engine == args.engine and (args.baseline, rnd) in calls:
                base = calls[(args.baseline, rnd)]
                ratio = sum(s["ms"] for s in base) / sum(s["ms"] for s in steps)
                classes[kind(steps)].append((ratio, sum(s["kind"] != "plain" for s in steps)))
                split[kind(steps)].update(parts(steps, base))
                base_ms += sum(s["ms"] for s in base)
            if engine not in (args.engine, args.baseline) or kind(steps) != "quiet":
                continue
            quiet_calls[engine] += 1
            for before, step in zip(steps, steps[1:]):
                slow[engine] += step["ms"] > args.slow
                if engine == args.engine:
                    what = "+".join(f for f in FIELDS if step.get(f) != before.get(f)) or "nothing"
                    changed[what] += 1
                    changed_slow[what] += step["ms"] > args.slow
    print("| calls of " + args.engine + " | calls | geometric mean | drafted steps a call | sum of log ratios |")
    print("|---|---:|---:|---:|---:|")
    for name, rows in sorted(classes.items()):
        logs = [math.log(r) for r, _ in rows]
        print(f"| {name} | {len(rows)} | {math.exp(sum(logs) / len(logs)):.3f} | "
              f"{sum(n for _, n in rows) / len(rows):.1f} | {sum(logs):+.3f} |")
    every = [math.log(r) for rows in classes.values() for r, _ in rows]
    if every:
        share = 100 * sum(every) / len(every)
        print(f"all {len(every)} calls: sum of log ratios {sum(every):+.3f} ({share:+.2f}% a call)")
    if args.parts and base_ms > 0:
        print_parts(split, base_ms)
    for engine in (args.engine, args.baseline):
        if quiet_calls[engine]:
            print(f"{engine}: {slow[engine] / quiet_calls[engine]:.2f} slow steps a call that drafted nothing "
                  f"({quiet_calls[engine]} calls)")
    print("| ledger fields changed | steps | slow | share slow |")
    print("|---|---:|---:|---:|")
    for what, n in sorted(changed.items(), key=lambda item: -item[1]):
        print(f"| {what} | {n} | {changed_slow[what]} | {changed_slow[what] / n:.4f} |")


if __name__ == "__main__":
    main()
