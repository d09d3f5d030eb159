# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`sim_pause_policy.py` with the engine's own call sequence: what a paused proposer costs.

`sim_pause_policy.py` asks the proposer `idle_rounds` / `propose` once a round. The engine asks
more, and what it asks decides what a step costs (`deepinfer_core.engine.async_core`):

  - before a step without drafts: `dormant_rounds` and `quiet_rounds` (through core's own
    `DormantSteps`, so a declared stretch asks nothing until it ends or the running count
    changes; a quiet one captures the features and hands them over), else
    `wants_features`: a step that captures the features costs `--capture` plain steps more;
  - after it: `idle_rounds`, and `idle_round` while paused; otherwise the next step waits for
    the token ids and calls `propose`; when that drafts nothing the step lost its overlap
    with the host (a sync, `--sync` plain steps; session 20's H200 step log: 0.6-1 ms spikes);
  - a drafted round costs the full k-round (`1 / SPS_spec(B (k + 1))`), plus `--flush` plain steps
    after a step without drafts (the buffered context's projection), and `--flush-per-pair` plain
    steps for each (request, step) pair captured since the last round or uncaptured step (the H200's
    engine, session 39: flushes of 700-3,000 pairs at 16-31 requests took 11-43 ms, ~0.01 plain steps
    a pair) and the next plain step
    `--sync` more (nothing in flight to overlap).

The fake drafter is `sim_pause_policy.FakeRunner` with `--calibrated` acceptance (each draft
accepted with the probability of its own confidence) and `--early 30 0.5` (openings accept less):
the H200's drafters of sessions 18-20. `--hard SHARE FACTOR` makes a share of the replies accept each
draft with FACTOR times its confidence: texts the drafter cannot follow, whatever it predicts (session
25). `--loops SHARE FROM TO` sends a share of the replies into a loop from a reply position drawn in
[FROM, TO]: from there the drafter's confidences and acceptance are around 0.95 (greedy replies that
repeat themselves: on the H200 in session 28 three of 16 replies at 1 request went from ~0.2 to
0.9-1.0 accepted drafts per draft past token 64, and fixed-7 earned its 1.10 there).
`--round-cost F` charges each drafted round F times the profile's round (the proposer still reads
the profile: rounds dearer under real traffic than where the profile was measured).
`--measure-rounds` lets the proposer time them (`measure_round_times`, on the simulated clock;
its `FlushCosts` is handed the spans `Clock` charges, flushes included: `ModelledFlushCosts`);
`--priced` hands it a profile scaled to their true cost (the bound timing can reach).
`--plain-read F` hands it a decode profile F times slower than the plain steps charged (session 33's
H200 profile at 8 requests: 1.19), and `--measure-plain` lets it time them over stretches
(`measure_plain_steps`).
`--lookup N` wraps the proposer in `LookupAssist` (`prompt_lookup_min` N): the replies then have
token ids (`Texts`: fresh ones, or a loop's period repeated) and a lookup draft is accepted while
it is the text's next tokens; a round of lookup drafts alone costs the plain step at batch + drafts
rows and the measured overhead `Clock.looked_up` charges (L in the trace). `--equal` gives every
reply 128 tokens, as the H200's docstring prompts did at 8 requests (no batch tail), `--capped SHARE` a share
of them, the rest 18-127 (the H100's batches at 8, session 69: ~0.7). At the acceptance where fixed-7 reads what
it read on the H100 at 8 (~0.91), all three length models read the default 1.05-1.06 where the H100 read ~0.99
(BENCHMARKS, sixty-fifth session): the replies' lengths are not what makes it optimistic there. Printed per
acceptance: per concurrency the ratio of plain decoding's time to the policy's (mean over seeds,
range) and fixed-k's; `--trace N` prints each step of the first N batches of seed 0: D drafted, z
dormant, q quiet (a stretch that keeps the features: captured and buffered, nothing asked), d
declined (asked), B captured and buffered, k captured (nothing buffered), s proposed with nothing
drafted; `--breakdown` prints per concurrency each overhead's share of plain decoding's time
(captures, syncs, flushes) and the drafted rounds' net share (negative: they gain), which add up to
the policy's time over plain decoding's. The replies' lengths are drawn apart from the acceptance
draws (since session 47: before, from the generator the policy's rounds also draw from, so two
policies ran different replies after the first concurrency, and the outputs recorded before differ).

Session 20 found with it, on the H200-like case (`--equal --p 0.7`, which fixed-7 runs at 0.77x
at 8 requests), batches whose requests all had gaps capturing features to their end with a sync
every 32 steps, and a paused opening that kept the features of a load ruled out
(BENCHMARKS.md, session 20).

Usage (repository root; profiles as `bench_dspark.py --save-sps` writes them):
    python3 packages/deepinfer-dspark/benchmarks/sim_engine_calls.py \
        --profiles benchmarks/results/h200-2026-12-01c/run3-paired-dormant --equal --p 0.66 0.7 0.75
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
import sim_engine_args  # noqa: E402
import sim_pause_policy as sim  # noqa: E402
from sim_engine_args import EARLY  # noqa: E402,F401 (re-exported: the tests read it here)
from deepinfer_core.engine.dormant_steps import DormantSteps  # noqa: E402
from deepinfer_core.interfaces import DraftRequest  # noqa: E402

from deepinfer_dspark.draft_costs import check_probe_share  # noqa: E402
from deepinfer_dspark.drained_batches import DrainedBatches  # noqa: E402
from deepinfer_dspark.flush_costs import FlushCosts  # noqa: E402
from deepinfer_dspark.frontier import Frontier  # noqa: E402
from deepinfer_dspark.full_acceptance import FullAcceptance  # noqa: E402
from deepinfer_dspark.lookup_assist import LookupAssist  # noqa: E402
from deepinfer_dspark.probe_headroom import check_headroom  # noqa: E402
from deepinfer_dspark.round_costs import H200_ROUND_COSTS  # noqa: E402
from deepinfer_dspark.proposers import DSparkProposer  # noqa: E402
from deepinfer_dspark.sps import SPSProfile  # noqa: E402

PROMPT = 20   # prompt tokens (the fake drafter's positions count from here)


class Clock:
    """Seconds charged to the policy (see the module docstring), in plain steps at the batch."""

    def __init__(self, decode: SPSProfile, spec: SPSProfile, k: int, capture: float, flush: float,
                 sync: float, round_cost: float = 1.0, flush_per_pair: float = 0.0) -> None:
        self.decode, self.spec, self.k, self.round_cost = decode, spec, k, round_cost
        self.capture, self.flush, self.sync = capture, flush, sync
        self.flush_per_pair, self.pairs = flush_per_pair, 0   # pairs: captured since the last flush or drop
        self.seconds, self.after_draft, self.after_lookup = 0.0, False, False
        self.extra = dict.fromkeys(("capture", "sync", "flush"), 0.0)   # seconds of each overhead

    def plain(self, batch: int, captured: bool, synced: bool) -> None:
        step = 1.0 / self.decode.at(batch)
        capture = self.capture * step if captured else 0.0
        sync = self.sync * step if (self.after_draft and not self.after_lookup) or synced else 0.0
        if self.after_lookup:   # launched with nothing in flight to wait for: cheaper (the H200's step log)
            sync = -H200_ROUND_COSTS.saving(batch) / self.decode.at(1)
        self.pairs = self.pairs + batch if captured else 0   # an uncaptured step drops the buffer
        self.extra["capture"] += capture
        self.extra["sync"] += sync
        self.seconds += step + capture + sync
        self.after_draft = self.after_lookup = False

    def looked_up(self, batch: int, drafts: int) -> None:
        """A round with prompt-lookup drafts only (`--lookup`): the plain step at batch + drafts
        requests (no drafter) plus `H200_ROUND_COSTS.round` 1-request steps (more when the step
        before was plain: the round waits for it), the plain step after a run `saving` less (the
        H200's step logs, session 30)."""
        over = H200_ROUND_COSTS.round(batch, self.after_draft) / self.decode.at(1)
        self.extra["sync"] += over
        self.seconds += 1.0 / self.decode.at(batch + drafts) + over
        self.after_draft = self.after_lookup = True

    def drafted(self, batch: int) -> None:
        flush = 0.0 if self.after_draft else (self.flush + self.flush_per_pair * self.pairs) / self.decode.at(batch)
        self.pairs = 0
        self.extra["flush"] += flush
        self.seconds += self.round_cost / self.spec.at(batch * (self.k + 1)) + flush
        self.after_draft, self.after_lookup = True, False


class ModelledFlushCosts(FlushCosts):
    """`FlushCosts` handed the seconds `Clock` charges a drafted round (its flush included, by the
    pairs the proposer flushed), not the host's: `Clock` charges outside `propose`."""

    def __init__(self, decode: SPSProfile, spec: SPSProfile, k: int, flush: float, flush_per_pair: float,
                 round_cost: float = 1.0) -> None:
        super().__init__()
        self.decode, self.spec, self.k, self.round_cost = decode, spec, k, round_cost
        self.flush, self.flush_per_pair = flush, flush_per_pair

    def add(self, batch: int, began: float, flushed: bool, pairs: int = 0) -> None:
        span = self.round_cost / self.spec.at(batch * (self.k + 1))
        if flushed:
            span += (self.flush + self.flush_per_pair * pairs) / self.decode.at(batch)
        self.record(batch, span, flushed, pairs)


def run_batch(proposer: DSparkProposer, dormant: DormantSteps, lengths: list[int], ids: list[str],
              rng: random.Random, clock: Clock, hard: dict[str, float] | None = None,
              queue: list[tuple[str, int]] | None = None, drain: bool = False) -> str:
    """One batch of replies of `lengths` tokens, started together, as the engine runs it; returns
    the steps' marks (see the module docstring). `hard`: request -> the factor its drafts'
    acceptance takes below their confidences (a reply the drafter cannot follow). `queue`: (id,
    length) of requests waiting, each admitted as a reply finishes (a closed loop of
    `len(ids)` slots): it prefills in the next step, whose features it gets when that step
    captures them (else its context has a gap: never drafted); the prefill is not charged. `drain`:
    the engine says it drains the batch once its requests are tracked (`LLM.generate`)."""
    hard, queue = hard or {}, list(queue or [])
    joined = []   # admitted, not yet prefilled
    k, marks = proposer.num_tokens, []
    left, pos = dict(zip(ids, lengths)), dict.fromkeys(ids, PROMPT)
    n = len(ids)
    text = Texts(proposer.runner.loops, "texts:" + ids[0])
    tokens = {r: text.admit(r, proposer) for r in ids}   # each request's live tokens, as the engine's
    if drain:
        proposer.draining(True)
    quiet = dormant.step(n)   # the prefill: a step without drafts
    if (quiet and dormant.features) or (not quiet and proposer.wants_features()):
        proposer.observe_step(ids, [0] * n, [PROMPT] * n, [PROMPT * i for i in range(n)], torch.zeros(PROMPT * n, 1))
    due = False
    if quiet:
        dormant.ran(n)
    elif proposer.idle_rounds() > 0:
        proposer.idle_round(n)
    else:
        due = True
    while left:
        live = list(left)
        drafts = None
        if due:
            asks = [DraftRequest(r, list(tokens[r]), min(k, left[r] - 1), 0.0, 0, 1.0, 0.0, 0, pos[r] - PROMPT)
                    for r in live]
            drafts = proposer.propose(asks)
            drafts = drafts if any(d.token_ids for d in drafts) else None
        emitted = dict.fromkeys(live, 1)
        if drafts is not None:
            quiet, captured = False, True
            looked = dict(getattr(proposer, "_open", {}))   # (`--lookup`: prompt-lookup drafts)
            for r, d in zip(live, drafts):
                if r in looked:   # accepted while they are the text's own next tokens
                    truth = text.tokens(r, pos[r] + 1 + len(d.token_ids))[pos[r] + 1:]
                    accepted = next((i for i, (a, b) in enumerate(zip(d.token_ids, truth)) if a != b),
                                    len(d.token_ids))
                else:
                    accepted, confidences = 0, proposer.runner.last.get(r, [])   # (none: not drafted for)
                    while accepted < len(d.token_ids) and rng.random() < confidences[accepted] * hard.get(r, 1.0):
                        accepted += 1
                emitted[r] = min(1 + accepted, left[r])
                proposer.commit(r, pos[r] + 1 + emitted[r])
            if all(r in looked for r, d in zip(live, drafts) if d.token_ids):
                clock.looked_up(len(live), sum(len(d.token_ids) for d in drafts))
                marks.append("L")
            else:
                clock.drafted(len(live))
                marks.append("D")
        else:
            quiet = dormant.step(len(live))
            captured = dormant.features if quiet else proposer.wants_features()   # a quiet stretch keeps them
            clock.plain(len(live), captured, due)
            marks.append("s" if due else ("q" if captured else "z") if quiet else "d" if not captured
                         else "B" if len(proposer.pending) else "k")
        if joined and captured:   # their prefill ran in this step: the prompt rows first
            proposer.observe_step(joined, [0] * len(joined), [PROMPT] * len(joined),
                                  [PROMPT * i for i in range(len(joined))], torch.zeros(PROMPT * len(joined), 1))
        joined = []
        for r in live:
            tokens[r].extend(text.tokens(r, pos[r] + 1 + emitted[r])[pos[r] + 1:])
        sim.advance(proposer, live, emitted, pos, left, captured)
        running = len(left)   # as the engine's update leaves them: a finished request's slot is
        due = False           # refilled at the next schedule, so its stretch ends here
        if quiet:
            dormant.ran(running)
        elif running:
            if proposer.idle_rounds() > 0:
                proposer.idle_round(running)
            else:
                due = True
        while queue and len(left) < n:   # closed loop: the freed slots are taken at the next step
            r, length = queue.pop(0)
            left[r], pos[r] = length, PROMPT
            tokens[r] = text.admit(r, proposer)
            joined.append(r)
    dormant.settle()
    return "".join(marks)


class Texts:
    """The requests' token ids, drawn as the replies go (`--lookup` reads them): fresh tokens
    from a large vocabulary (nothing repeats), except that a reply looping from position s
    (`FakeRunner.loops`) repeats its last `PERIOD` tokens from there on."""

    PERIOD = 12

    def __init__(self, loops: dict[str, int], seed: str) -> None:
        self.loops, self.rng, self.ids = loops, random.Random(seed), {}   # (apart from the policy's draws)

    def tokens(self, request_id: str, count: int) -> list[int]:
        """The request's first `count` tokens (prompt included)."""
        ids = self.ids.setdefault(request_id, [])
        start = PROMPT + self.loops.get(request_id, 1 << 30)
        while len(ids) < count:
            at = len(ids)
            ids.append(ids[at - self.PERIOD] if at >= start else self.rng.randrange(1 << 30))
        return ids

    def admit(self, request_id: str, proposer) -> list[int]:
        """The live list after the request's prefill (prompt + its first token), handed to a
        proposer that tracks requests (`Proposer.track`)."""
        live = list(self.tokens(request_id, PROMPT + 1))
        track = getattr(proposer, "track", None)
        if track is not None:
            track(request_id, live)
        return live


def simulate(args: argparse.Namespace, decode: SPSProfile, spec: SPSProfile, p: float, seed: int,
             trace: int = 0) -> dict[int, tuple[float, float, dict[str, float]]]:
    """One run of the plan (the proposer kept across it): concurrency -> (plain / policy time,
    plain / fixed-k time, {overhead or "rounds": its share of plain decoding's time}: the captures,
    syncs and flushes (`Clock`), and the rest, the drafted rounds' net loss (negative: gain))."""
    rng = random.Random(seed)
    read = spec   # the profile the proposer reads; `--priced`: the rounds' true cost
    if getattr(args, "priced", False):
        read = SPSProfile(spec.batch_tokens, [rate / args.round_cost for rate in spec.steps_per_s])
    early = _early(args)
    runner = sim.FakeRunner(args.k, p, random.Random(100 + seed), early)
    slow = getattr(args, "plain_read", 1.0)   # `--plain-read`: the decode profile the proposer reads
    read_decode = decode if slow == 1.0 else SPSProfile(decode.batch_tokens, [r / slow for r in decode.steps_per_s])
    proposer = DSparkProposer(runner, args.k, read, decode=read_decode,
                              measure_round_times=getattr(args, "measure_rounds", False),
                              measure_plain_steps=getattr(args, "measure_plain", False),
                              min_gain=getattr(args, "min_gain", 1.0),
                              judge_stragglers=getattr(args, "stragglers", False),
                              bound_only=getattr(args, "bound_only", 0),
                              overlap_bookkeeping=getattr(args, "overlap_bookkeeping", False),
                              lease_rounds=getattr(args, "lease_rounds", 0),
                              bound_only_untimed=getattr(args, "bound_only_untimed", False),
                              max_probe_every=getattr(args, "max_probe_every", 256),
                              probe_every=getattr(args, "probe_every", 8))
    proposer.settled_requests = getattr(args, "settled_requests", 0)   # (`--settled-requests`)
    proposer.min_replies = getattr(args, "min_replies", 0)   # (`--min-replies`)
    proposer.young_runs = getattr(args, "young_runs", False)   # (`--young-runs`)
    proposer.probe_transition = getattr(args, "probe_transition", False)   # (`--probe-transition`)
    proposer.opening_runs = getattr(args, "opening_runs", False)   # (`--opening-runs`)
    proposer.resume_bound = getattr(args, "resume_bound", False)   # (`--resume-bound`)
    proposer.run_noise = getattr(args, "run_noise", False)   # (`--run-noise`)
    proposer.rescale_stragglers = getattr(args, "rescale", False)   # (`--rescale`)
    if getattr(args, "frontier", False):   # (`--frontier`: `judge_frontier`, fed by `Stragglers`)
        by_run = not getattr(args, "frontier_by_round", False)   # (`--frontier-by-round`)
        proposer.judge_frontier, proposer.stragglers.frontier = True, Frontier(by_run)
    if getattr(args, "share_floor", None) is not None:   # (`--share-floor`: `PausePolicy.probe_share_floor`)
        proposer.probe_share_floor = check_probe_share(args.share_floor, "probe_share_floor")
    if getattr(args, "probe_headroom", None) is not None:   # (`--probe-headroom`: `PausePolicy.probe_headroom`)
        proposer.probe_headroom = check_headroom(args.probe_headroom)
    if getattr(args, "drained", False):   # (`--drained`, on the simulated clock: `rates.clock`)
        proposer.drained = DrainedBatches(proposer._plain_seconds, proposer.max_batch)
    if getattr(args, "age_rounds", None) is not None:   # (`--age-rounds`: `FullAcceptance.age_rounds`)
        proposer.acceptance.full = FullAcceptance(args.k, args.age_rounds)
    if getattr(args, "probe_share", None) is not None:   # (`--probe-share`: `DraftCosts.probe_share`)
        proposer.costs.probe_share = check_probe_share(args.probe_share)
    proposer.flush_costs = ModelledFlushCosts(decode, spec, args.k, args.flush, getattr(args, "flush_per_pair", 0.0),
                                              getattr(args, "round_cost", 1.0))
    if getattr(args, "lookup", 0):
        proposer = LookupAssist(proposer, args.lookup, tail_rounds=getattr(args, "tail_rounds", False))
    dormant, out, first = DormantSteps(proposer), {}, 0
    texts = random.Random(1000 + seed)   # which replies are hard (`--hard`), apart from `rng`
    loop_rng = random.Random(2000 + seed)   # which replies loop (`--loops`), and from where

    def loop_starts(count: int) -> list[int | None]:
        share, low, high = getattr(args, "loops", None) or (0.0, 0, 0)
        return [loop_rng.randint(int(low), int(high)) if loop_rng.random() < share else None
                for _ in range(count)]
    for c, count in args.plan:
        clock = Clock(decode, spec, args.k, args.capture, args.flush, args.sync, getattr(args, "round_cost", 1.0),
                      getattr(args, "flush_per_pair", 0.0))
        proposer.rates.pause()   # (`--measure-rounds`: the rounds timed on this concurrency's clock)
        proposer.rates.clock = lambda clock=clock: clock.seconds
        lengths_rng = random.Random(3000 + 97 * seed + c)   # the replies' lengths: the same for every policy
        work = [reply_lengths(args, lengths_rng, c) for _ in range(count)]
        closed = getattr(args, "closed", False)
        draining = getattr(proposer, "draining", None)   # (`--lookup`: `LookupAssist`'s tail weights)
        if draining is not None:
            draining(not closed and not getattr(args, "no_drain", False))   # as `LLM.generate` says
        if closed:   # one stream of every request, c at a time
            lengths = [n for batch in work for n in batch]
            ids = [f"r{first + i}" for i in range(len(lengths))]
            hard = {} if args.hard is None else {r: args.hard[1] for r in ids if texts.random() < args.hard[0]}
            runner.loops.update((r, s) for r, s in zip(ids, loop_starts(len(ids))) if s is not None)
            marks = run_batch(proposer, dormant, lengths[:c], ids[:c], rng, clock, hard,
                              list(zip(ids[c:], lengths[c:])))
            first += len(lengths)
            if trace:
                print(f"p={p} c={c} stream: {marks}")
            plain = stream_seconds(decode, lengths, c)
            shares = {kind: seconds / plain for kind, seconds in clock.extra.items()}
            shares["rounds"] = (clock.seconds - sum(clock.extra.values())) / plain - 1.0
            out[c] = (plain / clock.seconds, float("nan"), shares)
            continue
        loops = [loop_starts(c) for _ in work]
        hards = [[args.hard[1] if args.hard is not None and texts.random() < args.hard[0] else 1.0 for _ in range(c)]
                 for _ in work]   # (fixed-k's replies are as hard: `fixed_seconds`)
        for b, lengths in enumerate(work):
            ids = [f"r{first + i}" for i in range(c)]
            hard = {r: f for r, f in zip(ids, hards[b]) if f != 1.0}
            runner.loops.update((r, s) for r, s in zip(ids, loops[b]) if s is not None)
            marks = run_batch(proposer, dormant, lengths, ids, rng, clock, hard,
                              drain=draining is not None and not getattr(args, "no_drain", False))
            first += c
            if b < trace:
                print(f"p={p} c={c} batch {b}: {marks}")
        plain = sim.plain_seconds(decode, work)
        shares = {kind: seconds / plain for kind, seconds in clock.extra.items()}
        shares["rounds"] = (clock.seconds - sum(clock.extra.values())) / plain - 1.0
        fixed = sim.fixed_seconds(spec, args.k, p, work, 3 + seed, early, True, loops, hard=hards)
        fixed *= getattr(args, "round_cost", 1.0)
        out[c] = (plain / clock.seconds, plain / fixed, shares)
    return out


def reply_lengths(args: argparse.Namespace, rng: random.Random, count: int) -> list[int]:
    """`count` replies' output lengths: all 128 (`--equal`); with `--capped SHARE` a SHARE of them
    128 (the token limit) and the others drawn from 18-127 (session 69: on the H100, 34 of 48 traced
    replies at 8 requests reached the limit, the others stopped at 18-123); else drawn from 30-128."""
    if args.equal:
        return [128] * count
    capped = getattr(args, "capped", None)
    if capped is not None:
        return [128 if rng.random() < capped else rng.randint(18, 127) for _ in range(count)]
    return [rng.randint(30, 128) for _ in range(count)]


def _early(args: argparse.Namespace) -> tuple[int, float] | None:
    """`--early TOKENS P` (None with TOKENS 0: openings like the rest of a reply)."""
    tokens, level = getattr(args, "early", EARLY)
    return (int(tokens), level) if tokens > 0 else None


def stream_seconds(decode: SPSProfile, lengths: list[int], slots: int) -> float:
    """Plain decoding's seconds for replies of `lengths` tokens, at most `slots` running, each
    admitted as one finishes (prefills not charged, as `run_batch` charges none)."""
    waiting, running, seconds = list(lengths), [], 0.0
    while waiting or running:
        while waiting and len(running) < slots:
            running.append(waiting.pop(0))
        seconds += 1.0 / decode.at(len(running))
        running = [n - 1 for n in running if n > 1]
    return seconds


def main() -> None:
    args = sim_engine_args.parse(__doc__.split("\n\n")[0])
    decode = SPSProfile.load(args.profiles / "sps.json")
    spec = SPSProfile.load(args.profiles / "spec_sps.json")
    for p in args.p:
        runs = [simulate(args, decode, spec, p, seed, args.trace if seed == 0 else 0) for seed in range(args.seeds)]
        cells = []
        for c, _ in args.plan:
            ratios = [run[c][0] for run in runs]
            fixed = sum(run[c][1] for run in runs) / len(runs)
            cells.append(f"{c}: {sum(ratios) / len(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}, "
                         f"fixed-{args.k} {fixed:.3f})")
        print(f"p={p}  " + "  ".join(cells), flush=True)
        if args.breakdown:
            for c, _ in args.plan:
                shares = {kind: sum(run[c][2][kind] for run in runs) / len(runs) for kind in runs[0][c][2]}
                print(f"    {c}: " + "  ".join(f"{kind} {100 * share:+.1f}%" for kind, share in shares.items()))


if __name__ == "__main__":
    main()
