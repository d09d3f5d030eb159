# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Prompt lookup replayed over real greedy replies, one request at a time, on the H200's step costs.

At 1 request on the H200 (session 29, BENCHMARKS.md) confidence-scheduled DSpark with a weak
drafter drafts almost nothing, so what `prompt_lookup_min` (`LookupAssist`) adds is the whole
difference, and `ngram-7` (prompt lookup every step, n-grams of 4 down to 1) beat it: 1.14-1.22x
against 1.07-1.13x. This script replays both over replies that `record_replies.py` saved (the
target's own greedy text, so a lookup draft is accepted while it is the reply's next tokens),
in a closed loop of one request (the proposer kept across replies, as an engine keeps it):

  - `ngram`: `NgramProposer(1, 4)` every step, as core's `ngram` method drafts;
  - `lookup N`: a paused `DSparkProposer` (`sim_pause_policy.FakeRunner`, a round profile under
    which drafting never pays: every step is paused, as at 1 request there) wrapped in
    `LookupAssist(N)`, asked what the engine asks (`dormant_rounds` through core's `DormantSteps`,
    `idle_rounds`, `propose`, `commit`): its searches, stretches, match classes and `pays`.

Each step costs what the H200's step log measured at 1 request (mean ms, session 29's closed-loop
calls, `benchmarks/results/h200-2026-12-02f`): a plain step `--plain`, a round with drafts
`--round` (lone or back to back alike: 2.0-2.3), and the plain step right after a round `--after`
(0.55-0.65: the engine launches it with nothing to wait for). Printed per policy: plain
decoding's time over the policy's (each reply's ratio, then their mean, as `bench_dspark.py`'s
paired ratio), the rounds and the accepted drafts a round.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/lookup_replay.py --replies replies.json \
        --profiles benchmarks/results/h200-2026-12-02f/run5-closed-lookup --lookup 1 2 3 4 \
        --check-every 1 8 --sync-steps 0.45 0.9
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
import sim_pause_policy as sim  # noqa: E402
from deepinfer_core.engine.dormant_steps import DormantSteps  # noqa: E402
from deepinfer_core.interfaces import DraftRequest  # noqa: E402

import deepinfer_dspark.lookup_assist as lookup_assist  # noqa: E402
from deepinfer_dspark.lookup_assist import LookupAssist  # noqa: E402
from deepinfer_dspark.ngram import NgramProposer  # noqa: E402
from deepinfer_dspark.proposers import DSparkProposer  # noqa: E402
from deepinfer_dspark.sps import SPSProfile  # noqa: E402


class Costs:
    """Milliseconds charged to a policy's steps; `rounds` and `accepted` count its rounds."""

    def __init__(self, plain: float, round_ms: float, after: float) -> None:
        self.plain, self.round_ms, self.after = plain, round_ms, after
        self.ms, self.rounds, self.accepted, self.last_round = 0.0, 0, 0, False

    def step(self, drafted: bool, accepted: int = 0) -> None:
        self.ms += self.round_ms if drafted else self.after if self.last_round else self.plain
        self.rounds += drafted
        self.accepted += accepted
        self.last_round = drafted


def accepted_of(drafts: list[int], truth: list[int]) -> int:
    """Drafts accepted by greedy verification: the leading ones equal to the reply's next tokens."""
    return next((i for i, (a, b) in enumerate(zip(drafts, truth)) if a != b), min(len(drafts), len(truth)))


def replay_ngram(replies: list[dict], k: int, costs: Costs) -> list[float]:
    """Each reply's time (ms) under prompt lookup every step (n-grams of 4 down to 1)."""
    ngram, times = NgramProposer(1, 4), []
    for item in replies:
        began = costs.ms
        reply, ids, pos = item["reply"], list(item["prompt"]) + item["reply"][:1], 1
        while pos < len(reply):
            drafts = ngram.propose("r", ids, min(k, len(reply) - pos - 1))
            accepted = accepted_of(drafts, reply[pos:]) if drafts else 0
            costs.step(bool(drafts), accepted)
            ids.extend(reply[pos:pos + 1 + accepted])
            pos += 1 + accepted
        costs.last_round = False   # (the next request's prefill runs between)
        times.append(costs.ms - began)
    return times


def replay_lookup(replies: list[dict], k: int, min_n: int, decode: SPSProfile, costs: Costs,
                  check_every: int | None = None) -> list[float]:
    """Each reply's time (ms) under a paused DSpark wrapped in `LookupAssist(min_n)`, asked as the
    engine asks it (the order of `sim_engine_calls.run_batch`, one request)."""
    never = SPSProfile([1, 1024], [1e-3, 1e-3])   # a round profile under which drafting never pays
    inner = DSparkProposer(sim.FakeRunner(k, 0.3, random.Random(0)), k, never, decode=decode)
    kw = {} if check_every is None else {"check_every": check_every}
    proposer = LookupAssist(inner, min_n, **kw)
    dormant, times = DormantSteps(proposer), []
    for n, item in enumerate(replies):
        began, rid = costs.ms, f"r{n}"
        reply, ids, pos = item["reply"], list(item["prompt"]) + item["reply"][:1], 1
        proposer.track(rid, ids)
        due = False
        if dormant.step(1):   # the prefill step
            dormant.ran(1)
        elif proposer.idle_rounds() > 0:
            proposer.idle_round(1)
        else:
            due = True
        while pos < len(reply):
            drafts = []
            if due:
                ask = DraftRequest(rid, list(ids), min(k, len(reply) - pos - 1), 0.0, 0, 1.0, 0.0, 0, pos)
                drafts = proposer.propose([ask])[0].token_ids
            quiet = False if drafts else dormant.step(1)
            accepted = accepted_of(drafts, reply[pos:]) if drafts else 0
            costs.step(bool(drafts), accepted)
            if drafts:
                proposer.commit(rid, len(ids) + 1 + accepted)
            ids.extend(reply[pos:pos + 1 + accepted])
            pos += 1 + accepted
            due = False
            if pos >= len(reply):
                break
            if quiet:
                dormant.ran(1)
            elif proposer.idle_rounds() > 0:
                proposer.idle_round(1)
            else:
                due = True
        dormant.settle()
        proposer.remove(rid)
        costs.last_round = False
        times.append(costs.ms - began)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replies", type=Path, required=True, help="record_replies.py's JSON")
    parser.add_argument("--profiles", type=Path, required=True, help="folder with sps.json (the decode profile)")
    parser.add_argument("--lookup", type=int, nargs="+", default=[2], help="prompt_lookup_min values to replay")
    parser.add_argument("--check-every", type=int, nargs="+", default=[lookup_assist.CHECK_EVERY])
    parser.add_argument("--k", type=int, default=7)
    parser.add_argument("--sync-steps", type=float, nargs="+", default=[lookup_assist.SYNC_STEPS],
                        help="values of `lookup_assist.SYNC_STEPS` (what `pays` charges a sync) to replay")
    parser.add_argument("--plain", type=float, default=1.01, help="ms of a plain step")
    parser.add_argument("--round", type=float, default=2.2, help="ms of a round with drafts")
    parser.add_argument("--after", type=float, default=0.62, help="ms of the plain step after a round")
    args = parser.parse_args()
    if args.k < 1 or min(args.lookup) < 1 or min(args.check_every) < 1:
        parser.error("--k, --lookup and --check-every: must be >= 1")
    replies = [r for r in json.loads(args.replies.read_text())["replies"] if len(r["reply"]) > 1]
    decode = SPSProfile.load(args.profiles / "sps.json")
    plain = [args.plain * (len(r["reply"]) - 1) for r in replies]

    def row(name: str, times: list[float], costs: Costs) -> None:
        ratios = [p / t for p, t in zip(plain, times)]
        per = costs.accepted / costs.rounds if costs.rounds else 0.0
        print(f"| {name} | {statistics.fmean(ratios):.3f} | {sum(plain) / sum(times):.3f} | {costs.rounds} | "
              f"{per:.2f} |", flush=True)

    print(f"{len(replies)} replies, {sum(len(r['reply']) for r in replies)} tokens; step ms: plain {args.plain}, "
          f"round {args.round}, after a round {args.after}")
    print("| policy | mean paired ratio | total ratio | rounds | accepted drafts / round |\n|---|---:|---:|---:|---:|")
    costs = Costs(args.plain, args.round, args.after)
    row(f"ngram-{args.k}", replay_ngram(replies, args.k, costs), costs)
    default = lookup_assist.SYNC_STEPS
    try:
        for sync in args.sync_steps:
            lookup_assist.SYNC_STEPS = sync   # (`pays` reads it at each call)
            for min_n in args.lookup:
                for every in args.check_every:
                    costs = Costs(args.plain, args.round, args.after)
                    times = replay_lookup(replies, args.k, min_n, decode, costs, every)
                    row(f"lookup {min_n} (every {every}, sync {sync})", times, costs)
    finally:
        lookup_assist.SYNC_STEPS = default


if __name__ == "__main__":
    main()
