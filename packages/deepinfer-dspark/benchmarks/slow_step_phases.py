# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Where slow steps' time goes, by phase, from `bench_dspark.py --step-log --step-log-phases` logs.

Per engine, over its traced steps at `--concurrency` with requests running (a speculative engine's
calls that drafted nothing only, with `--quiet`: session 72's dormant calls at 8 requests, whose
slow steps were twice plain decoding's): the steps, the share above `--slow` ms, and each phase's
mean ms in the slow steps and in the others (`step_phases.PHASES`, then `other`: the step's ms
less its phases). The phase whose mean grows most between the two columns is where the slow steps
spent their extra time: `wait` the device, `gc` the collector, the rest the host's own work.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/slow_step_phases.py OUT/steps.jsonl.xz [...] \\
        [--concurrency 8] [--slow 1.6] [--quiet]
"""

from __future__ import annotations

import argparse
import collections
import json
import lzma

PHASES = ("schedule", "launch", "wait", "resolve", "sample", "update", "spec", "gc", "other")


def steps_of(paths: list[str], concurrency: int, quiet: bool) -> dict[str, list[dict]]:
    """Each engine's traced steps with requests running at `concurrency` (with `quiet`, a call that
    ran any drafted or lookup step is left out)."""
    calls = collections.defaultdict(list)
    for i, path in enumerate(paths):
        opener = lzma.open if path.endswith(".xz") else open
        with opener(path, "rt") as f:
            for line in f:
                step = json.loads(line)
                if step["concurrency"] == concurrency:
                    calls[(step["engine"], i, step["round"])].append(step)
    out = collections.defaultdict(list)
    for (engine, _, _), steps in calls.items():
        if quiet and any(s["kind"] != "plain" for s in steps):
            continue
        out[engine].extend(s for s in steps if s["running"] and "phases" in s)
    return out


def split(step: dict) -> dict[str, float]:
    """The step's phases with `other` (its ms less their sum, at least 0)."""
    phases = dict(step["phases"])
    phases["other"] = max(0.0, step["ms"] - sum(phases.values()))
    return phases


def table(steps_by_engine: dict[str, list[dict]], slow: float) -> list[str]:
    """Markdown rows: engine, steps, slow share, then per phase 'slow mean / other mean' ms."""
    lines = ["| engine | steps | slow | " + " | ".join(PHASES) + " |", "|---|---:|---:|" + "---:|" * len(PHASES)]
    for engine, steps in sorted(steps_by_engine.items()):
        groups = {True: [], False: []}
        for s in steps:
            groups[s["ms"] > slow].append(split(s))

        def mean(rows, phase):
            return sum(r.get(phase, 0.0) for r in rows) / len(rows) if rows else float("nan")
        cells = [f"{mean(groups[True], p):.3f} / {mean(groups[False], p):.3f}" for p in PHASES]
        lines.append(f"| {engine} | {len(steps)} | {len(groups[True]) / max(1, len(steps)):.3f} | "
                     + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--slow", type=float, default=1.6, help="a step above this many ms is slow")
    parser.add_argument("--quiet", action="store_true", help="speculative engines' calls that drafted nothing only")
    args = parser.parse_args()
    steps = steps_of(args.logs, args.concurrency, args.quiet)
    if not steps:
        parser.error(f"logs: no step with `phases` at concurrency {args.concurrency} (run with --step-log-phases)")
    print(f"phase ms a step: slow (above {args.slow} ms) / the others")
    print("\n".join(table(steps, args.slow)))


if __name__ == "__main__":
    main()
