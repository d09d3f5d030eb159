# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The host time `LookupAssist` (`prompt_lookup_min`) adds to a paused step.

While confidence scheduling pauses, the engine asks the proposer through core's `DormantSteps`:
`dormant_rounds` declares a stretch of steps it asks nothing for, reported afterwards with
`dormant_passed` (and `idle_rounds` / `idle_round` for a step outside one). With prompt lookup the
wrapper caps the stretches at `check_every` rounds where a lookup round could pay (1-2 requests
on the H200), so the engine asks before every step, and it searches each running request's
tokens every `CHECK_EVERY` tokens. This script drives a paused `DSparkProposer` (the simulation's
fake drafter, a decode profile under which drafting never pays: every step is paused) as the
engine does, with and without the wrapper, over requests whose contexts grow one fresh token a
step (no match: the filter `TokenBytes.repeats` answers every search), and prints per batch size
the mean host microseconds of a step (the best of `--repeats` runs, modes alternated): DSpark
alone, with the wrapper, the wrapper without its n-gram filter (each search syncs and matches the
window, as before session 34), and the wrapper searching nothing (the asks alone). It measures
this machine's host; the H200's is several times slower (BENCHMARKS.md).

`--replies FILE` (`record_replies.py`'s JSON, gzipped or not) grows each request along a real greedy
reply instead (its prompt, then one reply token a step; the next reply once it ends), so the filter
and the searches meet real text; `--quiet` pauses DSpark with the features kept (quiet stretches,
whose steps hand over their features: `observe_step`, a no-op here) instead of declining them.
In session 43 the tiny engine on this CPU showed why: there the wrapper's calls cost 30-60 us a
paused step, several times what the fresh-token dormant steps of this script read.

Usage (repository root; profiles as `bench_dspark.py --save-sps` writes them, `sps.json` and
`spec_sps.json` in one folder):
    python3 packages/deepinfer-dspark/benchmarks/lookup_host_cost.py \
        --profiles benchmarks/results/h200-2026-12-02e/run3-batch-rounds --batch 1 2 4 8 --context 300
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
import sim_pause_policy as sim  # noqa: E402
from deepinfer_core.engine.dormant_steps import DormantSteps  # noqa: E402

from deepinfer_dspark.lookup_assist import CHECK_EVERY, LookupAssist  # noqa: E402
from deepinfer_dspark.proposers import DSparkProposer  # noqa: E402
from deepinfer_dspark.sps import SPSProfile  # noqa: E402
from deepinfer_dspark.token_bytes import TokenBytes  # noqa: E402

MODES = ("dspark", "lookup", "lookup-unfiltered", "lookup-asks")


class _Unfiltered(TokenBytes):
    """`TokenBytes` without its filter: every search syncs and matches (before session 34)."""

    __slots__ = ()

    def repeats(self, view, known, n) -> bool:
        return True


class _Quiet(DSparkProposer):
    """DSpark paused with the features kept: its dormant stretches declared as quiet ones."""

    def dormant_rounds(self, num_requests: int) -> int:
        return 0

    def quiet_rounds(self, num_requests: int) -> int:
        return super().dormant_rounds(num_requests)

    def quiet_passed(self, num_requests: int, rounds: int) -> None:
        super().dormant_passed(num_requests, rounds)

    def observe_step(self, *args) -> None:   # (what DSpark does with the features is not the wrapper's cost)
        pass


def build(mode: str, batch: int, decode: SPSProfile, slow: SPSProfile, min_n: int, check_every: int, seed: int,
          quiet: bool = False):
    """A paused DSpark at `batch` requests (`quiet`: keeping the features), wrapped as `mode` says."""
    inner = (_Quiet if quiet else DSparkProposer)(sim.FakeRunner(7, 0.9, random.Random(seed)), 7, slow, decode=decode)
    proposer = inner if mode == "dspark" else LookupAssist(inner, min_n, check_every)
    if mode == "lookup-asks":
        proposer._search = lambda batch, request_ids=None: None   # (an instance attribute: no search)
    inner.propose([])   # (no requests: nothing judged; `_last_batch` is set below)
    inner._last_batch = batch
    return proposer


def step_time(proposer, batch: int, context: int, steps: int, seed: int, unfiltered: bool = False,
              replies: list[dict] | None = None) -> float:
    """Mean host seconds of `steps` paused steps at `batch` requests, as the engine asks
    (`DormantSteps.step`, else `idle_rounds` / `idle_round`; a quiet step's features handed over
    with `observe_step`), each request's context starting at `context` fresh tokens and growing
    by one a step, or (`replies`) along real replies, request i from reply i on."""
    rng = random.Random(seed)
    track = getattr(proposer, "track", None)
    views, streams, served = {}, {}, [batch - 1]

    def start(slot: int) -> None:
        request_id = f"r{slot}-{len(views)}"
        if replies is None:
            tokens, stream = [rng.randrange(1 << 30) for _ in range(context + 1)], None
        else:
            served[0] += 1
            reply = replies[served[0] % len(replies)]
            tokens, stream = list(reply["prompt"]) + reply["reply"][:1], iter(reply["reply"][1:])
        if track is not None:
            track(request_id, tokens)
            if unfiltered:
                proposer._ctx[request_id] = _Unfiltered()
        views[slot], streams[slot] = (request_id, tokens), stream   # (the first token: decoding, past the prompt)

    for slot in range(batch):
        start(slot)
    dormant, total, feats = DormantSteps(proposer), 0.0, None
    for _ in range(steps):
        for slot, (request_id, tokens) in list(views.items()):
            token = rng.randrange(1 << 30) if streams[slot] is None else next(streams[slot], None)
            if token is None:   # the reply ended: the next one in its slot (no step asked in between)
                dormant.settle()
                proposer.remove(request_id)
                start(slot)
            else:
                tokens.append(token)
        began = time.perf_counter()
        if dormant.step(batch):
            if dormant.features:
                proposer.observe_step([rid for rid, _ in views.values()], [len(t) - 1 for _, t in views.values()],
                                      [1] * batch, list(range(batch)), feats)
        elif proposer.idle_rounds() > 0:
            proposer.idle_round(batch)
        total += time.perf_counter() - began
    return total / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", type=Path, required=True, help="folder with sps.json and spec_sps.json")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--context", type=int, default=300, help="tokens each request starts with")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--min-n", type=int, default=2, help="prompt_lookup_min")
    parser.add_argument("--check-every", type=int, default=CHECK_EVERY, help="tokens between two searches")
    parser.add_argument("--replies", type=Path, help="record_replies.py's JSON (.gz too): requests grow along them")
    parser.add_argument("--quiet", action="store_true", help="DSpark paused with the features kept (quiet stretches)")
    args = parser.parse_args()
    if min(args.batch) < 1 or min(args.context, args.steps, args.repeats, args.min_n, args.check_every) < 1:
        parser.error("--batch, --context, --steps, --repeats, --min-n and --check-every: must be >= 1")
    replies = None
    if args.replies is not None:
        raw = args.replies.read_bytes()
        replies = [r for r in json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)["replies"]
                   if len(r["reply"]) > 1]
    decode = SPSProfile.load(args.profiles / "sps.json")
    spec = SPSProfile.load(args.profiles / "spec_sps.json")
    slow = SPSProfile(spec.batch_tokens, [rate / 100.0 for rate in spec.steps_per_s])   # drafting never pays
    for batch in args.batch:
        best = dict.fromkeys(MODES, float("inf"))
        for repeat in range(args.repeats):
            for mode in MODES:
                proposer = build(mode, batch, decode, slow, args.min_n, args.check_every, repeat, args.quiet)
                seconds = step_time(proposer, batch, args.context, args.steps, repeat, mode == "lookup-unfiltered",
                                    replies)
                best[mode] = min(best[mode], seconds)
        print(f"batch {batch}: a paused step, mean us: " + ", ".join(f"{m} {1e6 * s:.2f}" for m, s in best.items())
              + f"; the wrapper adds {1e6 * (best['lookup'] - best['dspark']):.2f}", flush=True)


if __name__ == "__main__":
    main()
