# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The straggler factor a fixed-k engine's drained calls imply, against what those calls kept,
from `bench_dspark.py --step-log` logs.

`Stragglers.factor(B)` estimates what share of a drafted round's gain a draining batch of B keeps
once its last reply decides the call's time. It computes that share from a sample of finished
requests: each one's output length L_i and the drafted rounds it needed. A fixed-k engine drafts
every round, so its traced calls give that sample directly:
- L_i: the decode step at which each reply of the baseline's same call (same log, concurrency and
  round: the same prompts) finished, read from its running count;
- needs_i: the drafted rounds after which each of the engine's replies finished.
Both columns are sorted apart, as `factor` treats them. This prints the factor the model computes
from those calls at the concurrency (uncapped: `factor` caps it at 1), with its inputs (the mean
tokens a round, sum L / sum needs, and a round's cost in plain steps at 1 and B requests, from
the profiles next to the log: a round of B requests at B (1 + `--profile-k`) tokens, as
`DraftCosts.round_rate` reads the k = 7 profile), beside what the same calls realized:
- `rounds`: the engine's rounds per mean request, priced in the baseline's median decode step at
  each running count (`judged_rounds.py`'s realized gain);
- `calls`: the geometric mean of the baseline's summed step ms over the engine's, call by call
  (`drafted_calls.py`'s pairing);
- `kept`: calls / rounds, the share of the rounds' gain the calls kept.
A model factor near `kept` says the straggler model holds where the sample is whole. Session 69
read it on the H100 at 8 requests: 0.834 against 0.81 kept.

Where this differs from the engine's own `Stragglers`: the engine's sample holds only requests
that drafted `MIN_ROUNDS` rounds or more, reads 1.0 before `MIN_SAMPLE` of them, is asked at
`ledger_bucket(B)`, takes L as output tokens and needs as output x rounds / emitted over the rounds
it drafted; here every request counts, at B, with L in plain decoding's decode steps and needs in
the engine's drafted steps. L and needs come from two engines' replies to the same prompts, which
may differ (greedy batches are not batch-invariant in the benchmark): read the columns as
distributions, as `factor` does. A call whose running count never shows all B requests (chunked
prefill admits them over several steps) is left out.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/drain_factor.py OUT/steps.jsonl.xz --concurrency 8 \\
        [--engine fixed-7] [--baseline none] [--profiles DIR] [--profile-k 7]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
from judged_rounds import judged_rounds  # noqa: E402
from step_log_report import load  # noqa: E402

from deepinfer_dspark.sps import SPSProfile  # noqa: E402
from deepinfer_dspark.stragglers import _expected_drains, running_counts  # noqa: E402


def finished_at(steps: list[dict], drafted: bool) -> list[int]:
    """The steps (decode steps without prefill, or with `drafted` the drafted steps) each request
    of a call had run when it finished, from the running count's drops (requests still running at
    the call's last step count all its steps). Only drops below the lowest count so far count: a
    finished request's slot is not refilled in batch form."""
    out: list[int] = []
    lowest, count = None, 0
    for row in steps:
        before = count   # the steps the requests missing from this row's count had run
        if (row["kind"].startswith("drafted") if drafted
                else row["kind"] == "plain" and row["running"] and not row["prefill_tokens"]):
            count += 1
        running = row["running"]
        if running and lowest is not None and running < lowest:
            out += [before] * (lowest - running)
        if running and (lowest is None or running < lowest):
            lowest = running
    return out + [count] * (lowest or 0)


def drain_sample(rows: list[dict], concurrency: int, engine: str,
                 baseline: str) -> tuple[list[int], list[int], list[int]]:
    """(lengths, needs, rounds) over the rounds both engines traced at `concurrency` with every
    request accounted for in both (see the module docstring); `rounds`: those rounds."""
    calls: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for row in rows:
        if row["concurrency"] == concurrency and row["engine"] in (engine, baseline):
            calls[(row["engine"], row["round"])].append(row)
    lengths, needs, used = [], [], []
    for (name, round_), steps in sorted(calls.items()):
        if name != baseline or (engine, round_) not in calls:
            continue
        plain, drafted = finished_at(steps, False), finished_at(calls[(engine, round_)], True)
        if len(plain) == len(drafted) == concurrency:
            lengths += plain
            needs += drafted
            used.append(round_)
    return lengths, needs, used


def model_factor(lengths: list[int], needs: list[int], plain: SPSProfile, spec: SPSProfile, k: int,
                 batch: int) -> dict[str, float]:
    """`Stragglers.factor(batch)`'s value on this sample, uncapped (`factor`: `min(1, value)`),
    with `mean` (tokens a round), `r1` / `rb` (a round's cost in plain steps at 1 / `batch`); a
    round of b requests costs the `spec` profile's round at b (1 + `k`) tokens."""
    lengths, needs = sorted(lengths), sorted(max(n, 1) for n in needs)
    mean = sum(lengths) / sum(needs)
    steps = [0.0] + [1.0 / plain.at(b) for b in range(1, batch + 1)]
    rounds = [0.0] + [1.0 / spec.at(b * (k + 1)) for b in range(1, batch + 1)]
    plain_s, drafted_s = _expected_drains([lengths, needs], [steps, rounds], running_counts(len(lengths), batch))
    return {"factor": plain_s / drafted_s / (mean * steps[batch] / rounds[batch]), "mean": mean,
            "r1": rounds[1] / steps[1], "rb": rounds[batch] / steps[batch]}


def realized_calls(rows: list[dict], concurrency: int, engine: str, baseline: str,
                   rounds: list[int] | None = None) -> float | None:
    """Geometric mean over the traced rounds (only `rounds`, if given) of the baseline's summed
    step ms over the engine's."""
    ms: dict[tuple[str, int], float] = defaultdict(float)
    for row in rows:
        if row["concurrency"] == concurrency and row["engine"] in (engine, baseline) \
                and (rounds is None or row["round"] in rounds):
            ms[(row["engine"], row["round"])] += row["ms"]
    ratios = [ms[(baseline, r)] / ms[(engine, r)] for (name, r) in ms if name == engine and (baseline, r) in ms]
    return math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="steps.jsonl, .jsonl.xz or .jsonl.gz from bench_dspark.py --step-log")
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--engine", default="fixed-7", help="a fixed-k engine (it drafts every round)")
    parser.add_argument("--baseline", default="none")
    parser.add_argument("--profile-k", type=int, default=7,
                        help="the drafts a request of the round profile's rounds verified (bench_dspark.py: 7)")
    parser.add_argument("--profiles", type=Path, default=None,
                        help="folder with sps_batch.json and spec_sps_batch.json (default: the log's folder)")
    args = parser.parse_args()
    if args.profile_k < 1:
        parser.error(f"--profile-k: must be >= 1, got {args.profile_k}")
    folder = args.profiles or args.log.parent
    plain, spec = SPSProfile.load(folder / "sps_batch.json"), SPSProfile.load(folder / "spec_sps_batch.json")
    rows = load(args.log)
    lengths, needs, used = drain_sample(rows, args.concurrency, args.engine, args.baseline)
    if not lengths:
        sys.exit(f"no round traced by both {args.engine!r} and {args.baseline!r} with all {args.concurrency} "
                 "requests accounted for in each")
    model = model_factor(lengths, needs, plain, spec, args.profile_k, args.concurrency)
    sampled = [r for r in rows if r["concurrency"] != args.concurrency or r["round"] in used]   # the same calls
    cell = next((r for r in judged_rounds([sampled], args.baseline)
                 if r["engine"] == args.engine and r["concurrency"] == args.concurrency), None)
    rounds = (cell or {}).get("realized")
    calls = realized_calls(rows, args.concurrency, args.engine, args.baseline, used)
    kept = calls / rounds if rounds and calls else None

    def num(value):
        return "-" if value is None else f"{value:.3f}"
    print("| requests | engine | sampled calls | model factor | tokens a round | round / plain step at 1, B "
          "| realized: rounds | calls | kept |")
    print("|---:|---|---:|---:|---:|---|---:|---:|---:|")
    print(f"| {args.concurrency} | {args.engine} | {len(lengths) // args.concurrency} | {num(model['factor'])} "
          f"| {model['mean']:.2f} | {model['r1']:.2f}, {model['rb']:.2f} "
          f"| {num(rounds)} | {num(calls)} | {num(kept)} |")


if __name__ == "__main__":
    main()
