# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The host time `LookupAssist` (`prompt_lookup_min`) adds to a paused step.

While confidence scheduling pauses, the engine asks the proposer `idle_rounds` and `idle_round`
once a step (or nothing, in dormant stretches). With prompt lookup the wrapper also searches each
running request's tokens every `CHECK_EVERY` tokens, and caps dormant stretches where a lookup
round could pay. This script drives a paused `DSparkProposer` (the simulation's fake drafter, a
decode profile under which drafting never pays: every step is paused) as the engine would, with
and without the wrapper, over requests whose contexts grow one fresh token a step (no match:
every search scans its whole window), and prints per batch size the median and the mean host
microseconds of a step of each (the best of `--repeats` runs, alternated; the mean holds the
searches, one every `CHECK_EVERY` steps a request) and the differences. It measures this
machine's host; the H200's is slower (BENCHMARKS.md).

Usage (repository root; profiles as `bench_dspark.py --save-sps` writes them):
    python3 packages/deepinfer-dspark/benchmarks/lookup_host_cost.py \
        --profiles benchmarks/results/h200-2026-12-02e/run3-batch-rounds --batch 1 2 8 --context 300
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
import sim_pause_policy as sim  # noqa: E402

from deepinfer_dspark.lookup_assist import CHECK_EVERY, LookupAssist  # noqa: E402
from deepinfer_dspark.proposers import DSparkProposer  # noqa: E402
from deepinfer_dspark.sps import SPSProfile  # noqa: E402


def step_times(proposer, batch: int, context: int, steps: int, seed: int) -> list[float]:
    """Host seconds of each of `steps` paused steps at `batch` requests (`idle_rounds` then
    `idle_round`), each request's context starting at `context` fresh tokens and growing by one."""
    rng = random.Random(seed)
    views = {f"r{i}": [rng.randrange(1 << 30) for _ in range(context)] for i in range(batch)}
    track = getattr(proposer, "track", None)
    for request_id, tokens in views.items():
        if track is not None:
            track(request_id, tokens)
        tokens.append(rng.randrange(1 << 30))   # decoding: past the prompt
    times = []
    for _ in range(steps):
        for tokens in views.values():
            tokens.append(rng.randrange(1 << 30))
        began = time.perf_counter()
        if proposer.idle_rounds() > 0:
            proposer.idle_round(batch)
        else:   # (never here: drafting cannot pay, a fresh context has no match)
            raise RuntimeError("the proposer asked for a round: drafting was expected to stay paused")
        times.append(time.perf_counter() - began)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", type=Path, required=True, help="folder with sps.json and spec_sps.json")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 2, 8])
    parser.add_argument("--context", type=int, default=300, help="tokens each request starts with")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--min-n", type=int, default=4, help="prompt_lookup_min")
    parser.add_argument("--check-every", type=int, default=CHECK_EVERY, help="tokens between two searches")
    args = parser.parse_args()
    if min(args.batch) < 1 or min(args.context, args.steps, args.repeats, args.min_n, args.check_every) < 1:
        parser.error("--batch, --context, --steps, --repeats, --min-n and --check-every: must be >= 1")
    decode = SPSProfile.load(args.profiles / "sps.json")
    spec = SPSProfile.load(args.profiles / "spec_sps.json")
    slow = SPSProfile(spec.batch_tokens, [rate / 100.0 for rate in spec.steps_per_s])   # drafting never pays
    for batch in args.batch:
        best = {"dspark": float("inf"), "lookup": float("inf")}
        mean = dict(best)
        for repeat in range(args.repeats):
            for mode in best:
                inner = DSparkProposer(sim.FakeRunner(7, 0.9, random.Random(repeat)), 7, slow, decode=decode,
                                       decline_features=False)
                proposer = LookupAssist(inner, args.min_n, args.check_every) if mode == "lookup" else inner
                inner.propose([])   # (no requests: nothing judged; `_last_batch` is set below)
                inner._last_batch = batch
                times = step_times(proposer, batch, args.context, args.steps, repeat)
                best[mode] = min(best[mode], statistics.median(times))
                mean[mode] = min(mean[mode], statistics.fmean(times))
        print(f"batch {batch}: a paused step, median (mean) us: dspark {1e6 * best['dspark']:.1f} "
              f"({1e6 * mean['dspark']:.1f}), with lookup {1e6 * best['lookup']:.1f} ({1e6 * mean['lookup']:.1f}): "
              f"+{1e6 * (best['lookup'] - best['dspark']):.1f} (+{1e6 * (mean['lookup'] - mean['dspark']):.1f})",
              flush=True)


if __name__ == "__main__":
    main()
