# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reads `bench_dspark.py --step-log` output by requests running: where a batch's time went as it
drained, for each engine at one concurrency, against the baseline's plain steps at the same count.

Per engine and running count n: plain steps and drafted steps (every other kind: drafted rounds,
with or without a flush, and prompt-lookup rounds), each as steps, summed ms, tokens emitted, and
tokens per ms; and the baseline's (`none`'s) plain tokens per ms at n. Prefill steps are left out.
In batch form a call lasts until its slowest reply, so an engine can gain at every n and still lose
the call: session 46's step logs (read so in session 47) show fixed-7's rounds at 8 requests at or
above plain decoding's tokens per ms at 3-8 running, and its 0.82 of plain decoding's time spent on
its last one or two requests (n = 1-2, 0.8-0.9 tokens per ms where plain steps give 1.0-1.3).

`--split` (`drain_split`) divides each engine's time over the baseline's at that concurrency (all
steps of its calls, prefill included) into the running counts it made its tokens at (composition:
its tokens at each n made at the baseline's plain tokens per ms at that n) and what its steps
themselves cost over that. Read so (session 48) on session 46's step logs at 8 requests, fixed-7's
+740 to +1,055 ms over plain decoding were +924 to +1,068 ms of composition and -200 to +99 ms of
its steps: the rounds paid at every running count, and the call lost on a batch drained unevenly
(requests that accept well finish early, the rest run on in smaller, dearer-per-token batches).

With `--verified K`, each engine's drafted rounds inside a run (the step before drafted too) with
all C requests running, split into full rounds (K drafts verified a request) and short ones:
rounds, mean verified drafts, mean accepted, median ms, tokens per ms. Session 47 read so that at
2 requests the default's short rounds (9-13 of 14 verified) cost within 0.1 ms of its full ones.

Usage:
    python3 packages/deepinfer-dspark/benchmarks/by_running.py steps.jsonl.xz --concurrency 8
        [--engines confidence fixed-7] [--baseline none] [--verified 7] [--split]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
from step_log_report import load  # noqa: E402

PLAIN, DRAFTED = "plain", "drafted"


def by_running(rows: list[dict], concurrency: int) -> dict[tuple[str, int, str], dict]:
    """{(engine, running, PLAIN or DRAFTED): {"steps", "ms", "tokens", "per_ms"}} over the decode
    steps (no prefill tokens) of `concurrency`'s calls; `per_ms` is tokens per ms (None at 0 ms)."""
    out: dict[tuple[str, int, str], dict] = defaultdict(lambda: {"steps": 0, "ms": 0.0, "tokens": 0})
    for r in rows:
        if r.get("concurrency") != concurrency or r.get("prefill_tokens"):
            continue
        cell = out[(r["engine"], r["running"], PLAIN if r["kind"] == "plain" else DRAFTED)]
        cell["steps"] += 1
        cell["ms"] += r["ms"]
        cell["tokens"] += r.get("emitted", 0)
    for cell in out.values():
        cell["per_ms"] = cell["tokens"] / cell["ms"] if cell["ms"] > 0 else None
    return dict(out)


def verified_split(rows: list[dict], concurrency: int, engine: str, k: int) -> dict[str, dict]:
    """{"full" | "short": {"rounds", "verified", "accepted", "median_ms", "per_ms"}} over `engine`'s
    drafted rounds (kind "drafted": no flush, capture or eager draft) with `concurrency` requests
    running, no prefill, right after a drafted step of the same call; full: k drafts verified a
    request. Only the kinds that occurred are keys."""
    steps = sorted((r for r in rows if r.get("engine") == engine and r.get("concurrency") == concurrency),
                   key=lambda r: (r["round"], r["step"]))
    groups: dict[str, list[dict]] = defaultdict(list)
    for before, r in zip(steps, steps[1:]):
        if (r["kind"] == "drafted" and before["kind"] == "drafted" and before["round"] == r["round"]
                and r["running"] == concurrency and not r.get("prefill_tokens")):
            groups["full" if r["verified"] >= k * concurrency else "short"].append(r)
    return {name: {"rounds": len(g), "verified": sum(r["verified"] for r in g) / len(g),
                   "accepted": sum(r["accepted"] for r in g) / len(g),
                   "median_ms": statistics.median(r["ms"] for r in g),
                   "per_ms": sum(r["emitted"] for r in g) / sum(r["ms"] for r in g)} for name, g in groups.items()}


def drain_split(rows: list[dict], concurrency: int, engine: str, baseline: str) -> dict | None:
    """{"calls", "over", "composition", "steps"} (ms, summed over `concurrency`'s calls): `engine`'s
    time over `baseline`'s (every step, prefill included); of it, the composition: the tokens its
    steps emitted at each running count n (prefill steps' too: in a closed loop they carry decode
    tokens and drafted rounds) made at the baseline's plain tokens per ms at n, plus the baseline's
    prefill steps' time (the same prompts), minus the baseline's time; and the steps: the rest
    (what its steps, prefill included, cost over that). A rate at an n the baseline never ran at
    this concurrency is read from its calls at the others (e.g. n = 1 from its one-request calls).
    None when the engines ran different numbers of calls or a needed rate is missing."""
    def calls(name: str) -> set:
        return {r["round"] for r in rows if r.get("engine") == name and r.get("concurrency") == concurrency}

    rate: dict[int, float] = {}
    for here in (True, False):   # this concurrency's steps first, then the others' for the n left
        cells = defaultdict(lambda: [0.0, 0])
        for r in rows:
            if (r.get("engine") == baseline and (r.get("concurrency") == concurrency) == here
                    and not r.get("prefill_tokens") and r["kind"] == "plain" and r["running"] not in rate):
                cells[r["running"]][0] += r["ms"]
                cells[r["running"]][1] += r.get("emitted", 0)
        rate.update({n: tokens / ms for n, (ms, tokens) in cells.items() if ms > 0 and tokens > 0})
    if len(calls(engine)) != len(calls(baseline)) or not calls(engine):
        return None
    total = {engine: 0.0, baseline: 0.0}
    at_rate = 0.0
    for r in rows:
        if r.get("concurrency") != concurrency or r.get("engine") not in total:
            continue
        total[r["engine"]] += r["ms"]
        if r["engine"] == baseline and r.get("prefill_tokens"):
            at_rate += r["ms"]
        if r["engine"] == engine and r.get("emitted", 0):
            if r["running"] not in rate:
                return None
            at_rate += r["emitted"] / rate[r["running"]]
    over = total[engine] - total[baseline]
    return {"calls": len(calls(engine)), "over": over, "composition": at_rate - total[baseline],
            "steps": total[engine] - at_rate}


def table(cells: dict, engines: list[str], baseline: str, concurrency: int) -> list[str]:
    """Markdown rows: engine, n, plain and drafted steps / ms / tokens per ms, the baseline's."""
    lines = ["| engine | running | plain steps | plain ms | plain tok/ms | drafted steps | drafted ms | "
             "drafted tok/ms | baseline tok/ms |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    empty = {"steps": 0, "ms": None, "per_ms": None}
    for engine in engines:
        for n in range(1, concurrency + 1):
            plain, drafted = cells.get((engine, n, PLAIN)), cells.get((engine, n, DRAFTED))
            if plain is None and drafted is None:
                continue
            base = cells.get((baseline, n, PLAIN), empty)
            cols = [engine, n]
            for cell in (plain or empty, drafted or empty):
                cols += [cell["steps"], _num(cell["ms"]), _num(cell["per_ms"])]
            lines.append("| " + " | ".join(map(str, [*cols, _num(base["per_ms"])])) + " |")
    return lines


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="steps.jsonl(.xz/.gz) from bench_dspark.py --step-log")
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--engines", nargs="+", default=None, help="default: every engine but the baseline")
    parser.add_argument("--baseline", default="none")
    parser.add_argument("--verified", type=int, default=0, metavar="K",
                        help="also the drafted rounds in runs split into full (K drafts a request) and short ones")
    parser.add_argument("--split", action="store_true",
                        help="also each engine's time over the baseline's, split into composition and steps")
    args = parser.parse_args()
    if not args.log.is_file():
        parser.error(f"log: no such file: {args.log}")
    rows = load(args.log)
    cells = by_running(rows, args.concurrency)
    if not cells:
        parser.error(f"--concurrency: no decode steps at {args.concurrency} in {args.log}")
    engines = args.engines or sorted({e for e, _, _ in cells} - {args.baseline})
    print("\n".join(table(cells, engines, args.baseline, args.concurrency)))
    if args.split:
        print("\n| engine | calls | ms over the baseline | composition (running counts) | the steps |\n"
              "|---|---:|---:|---:|---:|")
        for engine in engines:
            split = drain_split(rows, args.concurrency, engine, args.baseline)
            if split is None:
                print(f"| {engine} | (not comparable: other call counts or a running count the baseline never ran) "
                      f"| | | |")
                continue
            print(f"| {engine} | {split['calls']} | {split['over']:+.0f} | {split['composition']:+.0f} | "
                  f"{split['steps']:+.0f} |")
    if args.verified > 0:
        print("\n| engine | rounds | verified | accepted | median ms | tok/ms |\n|---|---|---:|---:|---:|---:|")
        for engine in engines:
            for name, g in sorted(verified_split(rows, args.concurrency, engine, args.verified).items()):
                print(f"| {engine} | {g['rounds']} {name} | {g['verified']:.1f} | {g['accepted']:.2f} | "
                      f"{g['median_ms']:.2f} | {g['per_ms']:.2f} |")


if __name__ == "__main__":
    main()
