# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The host time confidence scheduling adds to a drafted round, against fixed-k drafting.

On the H200 (session 25, BENCHMARKS.md) a confidence engine drafting every round at 1 request
(`confidence-whole`) verified exactly what fixed-7 verified, on the same texts, yet its rounds
took 3.53 ms against 3.30: the proposer's own decisions (Algorithm 1 over the confidences, the
acceptance bookkeeping at each commit, the pause ledger, the `expected_loss` check before each
round) run on the host between the draft and the verification. This script times that work
alone: a `DSparkProposer` driven as the engine drives it (`idle_rounds`, `propose`, one `commit`
per drafted request, `observe_many` for the committed positions), with the simulation's fake
drafter (`sim_pause_policy.FakeRunner`: its draft costs the same in both modes) drafting k
tokens with confidences around `--level`, each draft accepted with the probability of its own
confidence. The confidence proposer gets the given profiles and `opening_tokens=0`; rounds in
which it did not draft are left out. Printed per batch size: the median host time of a drafted
round of each mode (the best of `--repeats` runs of `--rounds` rounds, the modes alternated) and the difference.

Usage (repository root; profiles as `bench_dspark.py --save-sps` writes them):
    python3 packages/deepinfer-dspark/benchmarks/proposer_host_cost.py \
        --profiles benchmarks/results/h200-2026-12-02b/run8-whole-fast --batch 1 2 8
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
import sim_pause_policy as sim  # noqa: E402
from deepinfer_core.interfaces import DraftRequest  # noqa: E402

from deepinfer_dspark.factories import (  # noqa: E402
    BOUND_ONLY_DEFAULT, LEASE_DEFAULT, UNTIMED_DEFAULT, LOOKUP_DEFAULT, OVERLAP_DEFAULT, STRAGGLERS_DEFAULT)
from deepinfer_dspark.lookup_assist import LookupAssist  # noqa: E402
from deepinfer_dspark.proposers import DSparkProposer  # noqa: E402
from deepinfer_dspark.sps import SPSProfile  # noqa: E402

PROMPT = 20       # prompt tokens a request starts with
RESTART = 1500    # tokens after which a request is replaced by a fresh one (bounded contexts)


def round_times(mode: str, batch: int, rounds: int, k: int, level: float, decode: SPSProfile,
                spec: SPSProfile, seed: int = 0, timed: bool = False) -> tuple[list[float], float]:
    """Seconds of host work of each drafted round (`idle_rounds` + `propose` + the commits) of a
    `mode` proposer ("fixed", "confidence", "default": confidence scheduling with the engine
    factory's defaults, rounds timed, wrapped for prompt lookup, the draft hook's work left out as
    the drafter's forward hides it on CUDA, `opening_tokens` 0 as for "confidence"; "unleased": the
    default without `DraftingLease`, `lease_rounds` 0; `timed`: the "confidence" mode with
    `measure_round_times`) at `batch` requests, over `rounds` rounds, and the draft hook's mean
    seconds a drafted round (0 but for "default" and "unleased")."""
    runner = sim.FakeRunner(k, level, random.Random(seed))
    kw = {} if mode == "fixed" else {"sps": spec, "decode": decode, "opening_tokens": 0,
                                     "measure_round_times": timed}
    if mode in ("default", "unleased"):   # the engine factory's defaults (`factories.py`), the prompt-lookup
        kw.update(bound_only=BOUND_ONLY_DEFAULT, judge_stragglers=STRAGGLERS_DEFAULT,   # wrapper included, the
                  overlap_bookkeeping=OVERLAP_DEFAULT, measure_round_times=True,        # rounds timed as with a
                  lease_rounds=0 if mode == "unleased" else LEASE_DEFAULT,           # decode profile
                  bound_only_untimed=UNTIMED_DEFAULT)
    proposer = DSparkProposer(runner, k, **kw)
    hidden = [0.0]   # seconds in the draft's `while_running` hook: on CUDA during the drafter's forward
    if mode in ("default", "unleased"):
        runner_draft = runner.draft

        def timed_draft(requests, k, while_running=None):
            def hook():
                began = time.perf_counter()
                while_running()
                hidden[0] += time.perf_counter() - began
            return runner_draft(requests, k, None if while_running is None else hook)
        runner.draft = timed_draft
        proposer = LookupAssist(proposer, LOOKUP_DEFAULT)
    rng, feature = random.Random(seed + 1), torch.zeros(1, 4)
    ids = [f"r{i}" for i in range(batch)]
    tokens: dict[str, list[int]] = {}

    def start(request_id: str) -> None:
        tokens[request_id] = list(range(PROMPT))
        proposer.track(request_id, tokens[request_id])
        proposer.observe_many([(request_id, list(range(PROMPT - 1)), feature.expand(PROMPT - 1, 4))])

    for request_id in ids:
        start(request_id)
    times, hooks = [], []
    for _ in range(rounds):
        asks = [DraftRequest(i, tokens[i], k, 0.0, 0, 1.0, 0.0, 0, len(tokens[i]) - PROMPT) for i in ids]
        began, hidden[0] = time.perf_counter(), 0.0
        proposer.idle_rounds()
        drafts = proposer.propose(asks)
        grown = {}
        for i, draft in zip(ids, drafts):
            if draft.token_ids:
                accepted = 0
                for c in runner.last[i][:len(draft.token_ids)]:
                    if rng.random() >= c:
                        break
                    accepted += 1
                grown[i] = accepted + 1
                proposer.commit(i, len(tokens[i]) + grown[i])
        spent = time.perf_counter() - began - hidden[0]
        if grown:
            times.append(spent)
            hooks.append(hidden[0])
        for i in ids:
            n, first = grown.get(i, 1), len(tokens[i]) - 1
            tokens[i].extend([7] * n)
            proposer.observe_many([(i, list(range(first, first + n)), feature.expand(n, 4))])
            if len(tokens[i]) > RESTART:
                proposer.remove(i)
                start(i)
    return times, sum(hooks) / max(len(hooks), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", type=Path, required=True,
                        help="folder with sps.json (plain decode steps) and spec_sps.json (k-rounds)")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 2, 8])
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--k", type=int, default=7)
    parser.add_argument("--level", type=float, default=0.9, help="the fake drafter's mean confidence")
    parser.add_argument("--timed", action="store_true",
                        help="the confidence proposer times its rounds (`measure_round_times`)")
    args = parser.parse_args()
    decode = SPSProfile.load(args.profiles / "sps.json")
    spec = SPSProfile.load(args.profiles / "spec_sps.json")
    modes = ("fixed", "confidence", "unleased", "default")
    print("| requests | " + " | ".join(f"{m} us/round" for m in modes) + " | unleased / default hook us "
          "| unleased extra us | default extra us | drafted (confidence, unleased, default) |")
    print("|---:|" + "---:|" * (len(modes) + 4))
    for batch in args.batch:
        runs: dict[str, list[tuple[list[float], float]]] = {m: [] for m in modes}
        for _ in range(args.repeats):   # alternated: a slow spell of the host hits every mode
            for mode, out in runs.items():
                out.append(round_times(mode, batch, args.rounds, args.k, args.level, decode, spec,
                                       timed=args.timed))
        us = {m: min(statistics.median(times) for times, _ in runs[m]) * 1e6 for m in modes}
        hook = {m: min(h for _, h in runs[m]) * 1e6 for m in ("unleased", "default")}
        drafted = ", ".join(str(len(runs[m][0][0])) for m in ("confidence", "unleased", "default"))
        print(f"| {batch} | " + " | ".join(f"{us[m]:.1f}" for m in modes)
              + f" | {hook['unleased']:.1f} / {hook['default']:.1f} | {us['unleased'] - us['fixed']:+.1f} "
              f"| {us['default'] - us['fixed']:+.1f} | {drafted} of {args.rounds} |")


if __name__ == "__main__":
    main()
