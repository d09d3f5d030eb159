# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Time-cost simulation of confidence scheduling's pause policy on chat batches (CPU, seconds).

The real `DSparkProposer` decides every round; a fake drafter gives each draft a confidence
around `--p-conf` and the target accepts each draft with probability `--p-true` (a run of
Bernoulli trials, as a drafter whose per-draft acceptance is constant). Each batch of C requests
draws reply lengths uniformly in [30, 128] tokens and runs until the last one ends, so the batch
shrinks as requests finish (its tail). Time is charged from the measured profiles: a plain round
1 / SPS_decode(B), a drafted round 1 / SPS_spec(B (1 + k)) whatever it verifies (an upper bound:
verifying fewer drafts is cheaper; the drafting is not). A policy's transitions are charged in
plain steps at that batch (`--overhead FLUSH SYNC`): a drafted round after a round without
drafts pays FLUSH more (it projects the context buffered meanwhile: 4.5-6.3 ms against 3.3 ms
for a drafted round at 8 requests on the H200, session 15's step log) and a round without drafts
after a drafted one pays SYNC more (nothing in flight to overlap: ~1.9 ms against ~1.0). By default the
per-row cost of projecting buffered features is not charged (every buffered (request, step) pair
is walked once by some flush, whichever round it happens in), nor are the features a paused step
captures, and every step is observed: `--features CAPTURE ROW_US` models `wants_features` (a
declined step leaves its requests a gap) and charges both. Printed
per concurrency: the ratio of plain decoding's time to the policy's
time for the same batches (above 1: faster than plain decoding), the share of rounds drafted,
and the same ratio for fixed-k (always drafting).

Two options make the drafter less uniform: `--calibrated` accepts each draft with the
probability of its own confidence (a calibrated drafter: the confidences then carry information,
and the realized acceptance matches the predicted one, as on the H200 at 1 request in session
18), and `--early TOKENS P` lowers the acceptance (and the confidences) in a reply's first TOKENS
tokens. With both (`--p-true 0.75 --early 30 0.5 --calibrated --opening-tokens 0`), fixed-7
runs at 1.07x plain decoding at 1 request while the policy of sessions 8-18 pauses (0.99x): the
H200's finding. After a settled loss the requests then running lose their context (declined
features), so only new replies are probed, at their openings, where drafting loses. With the
default `--opening-tokens 32` (`OpeningPhase`) the same runs at 1.15x.

One run's cells move by 2-4% with its random draws (session 17), as much as the policy changes
weighed with it: compare policies over several seeds (`--seeds`, each cell then shows the mean
and the range of the policy's ratio).

Usage (repository root; profiles as `bench_dspark.py --save-sps` writes them):
    python3 packages/deepinfer-dspark/benchmarks/sim_pause_policy.py \
        --profiles benchmarks/results/h200-2026-12-01b/run7-paired-final --p-true 0.6 0.7 0.8 --seeds 6
"""

from __future__ import annotations

import argparse
import random
import re
import types
from pathlib import Path
from typing import NamedTuple

import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.draft_runner import DraftOutput
from deepinfer_dspark.opening_phase import OPENING_TOKENS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.verify_rates import VerifyRates


class FakeRunner:
    """Drafts k tokens with confidences around `level` (Gaussian, sd 0.15, clipped); holds every
    position it was shown. `loops`: request id -> the reply position from which its text
    repeats itself (`loop_level` then: a greedy reply caught in a loop, which the drafter
    follows; `sim_engine_calls.py --loops`)."""

    def __init__(self, k: int, level: float, rng: random.Random, early: tuple[int, float] | None = None) -> None:
        self.drafter = types.SimpleNamespace(config=types.SimpleNamespace(block_size=k, target_layer_ids=[1]),
                                             dtype=torch.float32)
        self.level, self.rng, self.held, self.early = level, rng, {}, early
        self.last: dict[str, list[float]] = {}   # request id -> its last draft's confidences
        self.loops: dict[str, int] = {}
        self.loop_level = 0.95

    def num_positions(self, request_id: str) -> int:
        return self.held.get(request_id, 0)

    def observe_rows(self, items, features) -> None:
        for request_id, positions in items:
            self.held[request_id] = positions[-1] + 1

    def observe_batch(self, items) -> None:
        self.observe_rows([(r, p) for r, p, _ in items], None)

    def draft(self, requests, k: int, while_running=None) -> list:
        if while_running is not None:   # (`DSparkDraftRunner.draft`'s hook: nothing runs on a device here)
            while_running()
        outs = []
        for r in requests:
            level = self._level(r.anchor_position - 20, r.request_id)
            self.last[r.request_id] = [confidence(level, self.rng) for _ in range(k)]
            outs.append(DraftOutput(torch.full((k,), 7), None, torch.tensor(self.last[r.request_id]), None))
        return outs

    def _level(self, step: int, request_id: str | None = None) -> float:   # (prompts are 20 tokens long here)
        """The confidence level at reply position `step` (`--early`: lower in a reply's first
        tokens; `loops`: `loop_level` from the request's loop on)."""
        if request_id is not None and step >= self.loops.get(request_id, 1 << 30):
            return self.loop_level
        return self.early[1] if self.early is not None and step < self.early[0] else self.level

    def remove(self, request_id: str) -> None:
        self.held.pop(request_id, None)


def batches(c: int, count: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randint(30, 128) for _ in range(c)] for _ in range(count)]


def plain_seconds(decode: SPSProfile, work: list[list[int]]) -> float:
    return sum(1 / decode.at(sum(1 for n in lengths if n > step))
               for lengths in work for step in range(max(lengths)))


def confidence(level: float, rng: random.Random) -> float:
    """A draft's confidence: Gaussian around `level` (sd 0.15), clipped to [0.01, 0.99]."""
    return min(0.99, max(0.01, level + rng.gauss(0.0, 0.15)))


def acceptance(p_true: float, early: tuple[int, float] | None, step: int) -> float:
    """The per-draft acceptance at reply position `step` (`--early TOKENS P`: P in the first TOKENS)."""
    return early[1] if early is not None and step < early[0] else p_true


def fixed_seconds(spec: SPSProfile, k: int, p_true: float, work: list[list[int]], seed: int,
                  early: tuple[int, float] | None = None, calibrated: bool = False,
                  loops: list[list[int | None]] | None = None, loop_level: float = 0.95,
                  hard: list[list[float]] | None = None) -> float:
    """Fixed-k drafting's seconds over `work`; `calibrated`: each draft is accepted with the
    probability of a confidence drawn as the fake drafter draws it, around the acceptance.
    `loops`: per batch and reply, the position from which it accepts around `loop_level` (None:
    never; `FakeRunner.loops`). `hard`: per batch and reply, the factor its acceptance takes
    (`sim_engine_calls.py --hard`; 1.0: none)."""
    rng, seconds = random.Random(seed), 0.0
    for b, lengths in enumerate(work):
        left = list(lengths)
        while any(left):
            live = [i for i, n in enumerate(left) if n > 0]
            seconds += 1 / spec.at(len(live) * (k + 1))
            for i in live:
                accepted, room = 0, min(k, left[i] - 1)   # as the engine bounds drafts (`_room`)
                p = acceptance(p_true, early, lengths[i] - left[i])
                start = loops[b][i] if loops is not None else None
                if start is not None and lengths[i] - left[i] >= start:
                    p = loop_level
                factor = hard[b][i] if hard is not None else 1.0
                while accepted < room and rng.random() < (confidence(p, rng) if calibrated else p) * factor:
                    accepted += 1
                left[i] -= 1 + accepted
    return seconds


class FeatureCosts(NamedTuple):
    """`--features CAPTURE ROW_US`: the engine asks `wants_features` before every step without
    drafts; a declined step is not observed (its requests get a gap, as on the engine). A plain
    step that captures the features costs CAPTURE plain steps more, and a drafted round that
    flushes the buffer ROW_US microseconds more per row projected."""

    capture: float
    row_us: float


def policy_seconds(proposer: DSparkProposer, decode: SPSProfile, spec: SPSProfile, p_true: float,
                   work: list[list[int]], seed: int, first_id: int,
                   charge: VerifyRates | None = None, overhead: tuple[float, float] = (0.0, 0.0),
                   features: FeatureCosts | None = None, early: tuple[int, float] | None = None,
                   calibrated: bool = False) -> tuple[float, float]:
    """Seconds and drafted share of the policy over `work`, the proposer kept across calls. A
    drafted round costs the full round, or with `charge` its own verified tokens' time; the
    transitions cost `overhead` (FLUSH, SYNC) plain steps; with `features`, declined features
    and what capturing and flushing them cost (`FeatureCosts`); with `early` (TOKENS, P), a reply's
    first TOKENS tokens accept each draft with probability P; `calibrated`: each draft is accepted
    with the probability of its own confidence instead."""
    rng, seconds, rounds, drafted, k = random.Random(seed), 0.0, 0, 0, proposer.num_tokens
    was_drafted = None   # the last round's kind in this batch (None: the batch's first round)
    for b, lengths in enumerate(work):
        ids = [f"r{first_id + b * len(lengths) + i}" for i in range(len(lengths))]
        left, pos = dict(zip(ids, lengths)), dict.fromkeys(ids, 20)
        if features is None or proposer.wants_features():   # the prefill (a step without drafts)
            proposer.observe_step(ids, [0] * len(ids), [20] * len(ids), [20 * i for i in range(len(ids))],
                                  torch.zeros(20 * len(ids), 1))
        was_drafted = None
        while left:
            live, rounds = list(left), rounds + 1
            buffered = len(proposer.pending)
            if proposer.idle_rounds() > 0:
                proposer.idle_round(len(live))
                drafts = None
            else:
                drafts = proposer.propose([DraftRequest(r, [1] * (pos[r] + 1), min(k, left[r] - 1), 0.0, 0, 1.0, 0.0,
                                                        0, pos[r] - 20) for r in live])
            emitted = dict.fromkeys(live, 1)
            observed = True
            if drafts is None or not any(d.token_ids for d in drafts):
                seconds += (1 + (overhead[1] if was_drafted else 0.0)) / decode.at(len(live))
                was_drafted = False
                if features is not None:
                    observed = proposer.wants_features()
                    seconds += features.capture / decode.at(len(live)) if observed else 0.0
            else:
                if features is not None:   # the rows this round's flush projected
                    seconds += features.row_us * 1e-6 * max(buffered - len(proposer.pending), 0)
                drafted += 1
                if was_drafted is False:
                    seconds += overhead[0] / decode.at(len(live))
                was_drafted = True
                if charge is None:   # the full round, whatever it verifies
                    seconds += 1 / spec.at(len(live) * (k + 1))
                else:   # the round's own verified tokens
                    verified = sum(len(d.token_ids) for d in drafts)
                    seconds += 1 / charge.for_batch(len(live)).at(len(live) + verified)
                for r, d in zip(live, drafts):
                    accepted, p = 0, acceptance(p_true, early, pos[r] - 20)
                    confs = proposer.runner.last[r]
                    while accepted < len(d.token_ids) and rng.random() < (confs[accepted] if calibrated else p):
                        accepted += 1
                    emitted[r] = min(1 + accepted, left[r])
                    proposer.commit(r, pos[r] + 1 + emitted[r])
            advance(proposer, live, emitted, pos, left, observed)
    return seconds, drafted / max(rounds, 1)


def advance(proposer: DSparkProposer, live: list[str], emitted: dict[str, int], pos: dict[str, int],
            left: dict[str, int], observed: bool) -> None:
    """After a step: its features shown to the proposer (when captured), each request moved on by
    the tokens it emitted, and the finished ones removed."""
    counts = [emitted[r] for r in live]
    if observed:
        proposer.observe_step(live, [pos[r] for r in live], counts, [sum(counts[:i]) for i in range(len(live))],
                              torch.zeros(sum(counts), 1))
    for r in live:
        pos[r] += emitted[r]
        left[r] -= emitted[r]
        if left[r] <= 0:
            del left[r]
            proposer.remove(r)


def simulate(args, decode: SPSProfile, spec: SPSProfile, p_true: float, short: SPSProfile | None,
             charge: VerifyRates | None, seed: int, full_round: bool = False) -> list[tuple[float, float, float]]:
    """One run of every concurrency in order, the proposer kept across them: per concurrency
    (plain / policy time, drafted share, plain / fixed-k time). Seed 0 is the single run of
    sessions 11-16; seed s draws other confidences, reply lengths and acceptances."""
    early = None if args.early is None else (int(args.early[0]), args.early[1])
    level = p_true if args.calibrated else (args.p_conf or p_true)
    proposer = DSparkProposer(FakeRunner(args.k, level, random.Random(seed), early), args.k, spec,
                              decode=decode, short_sps=short, full_round=full_round,
                              opening_tokens=getattr(args, "opening_tokens", OPENING_TOKENS))
    out = []
    for i, c in enumerate(args.concurrency):
        base = i + 1000 * seed
        work = batches(c, max(args.batches, 256 // c), seed=1 + base)   # >= 256 requests
        plain = plain_seconds(decode, work)
        features = None if args.features is None else FeatureCosts(*args.features)
        seconds, share = policy_seconds(proposer, decode, spec, p_true, work, 2 + base, 10**6 * i, charge,
                                        tuple(args.overhead), features, early, args.calibrated)
        out.append((plain / seconds, share,
                     plain / fixed_seconds(spec, args.k, p_true, work, 3 + base, early, args.calibrated)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\nUsage")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", type=Path, required=True, help="folder with sps.json and spec_sps.json")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64, 128, 256])
    parser.add_argument("--k", type=int, default=7, help="drafts per round (the spec profile's k)")
    parser.add_argument("--p-true", type=float, nargs="+", default=[0.64], help="per-draft acceptance")
    parser.add_argument("--p-conf", type=float, default=None, help="confidence level (default: --p-true)")
    parser.add_argument("--k1", action="store_true",
                        help="charge drafted rounds at their own verified tokens, interpolated with the "
                             "folder's spec_k1_sps.json (`VerifyRates`), and run the policy with and without it")
    parser.add_argument("--full-round", action="store_true",
                        help="also run the policy with prefix_pricing='full_round' (Algorithm 1 prices every "
                             "round as the full one, as the pause policy does: it verifies every draft)")
    parser.add_argument("--overhead", type=float, nargs=2, default=[1.5, 0.9], metavar=("FLUSH", "SYNC"),
                        help="plain steps a drafted round after a plain one, and a plain round after a drafted "
                             "one, cost on top (the H200's, session 15; 0 0 for none)")
    parser.add_argument("--batches", type=int, default=10,
                        help="chat batches per concurrency (at least 256 requests' worth)")
    parser.add_argument("--features", type=float, nargs=2, default=None, metavar=("CAPTURE", "ROW_US"),
                        help="model declined features (`wants_features`): a plain step that captures them costs "
                             "CAPTURE plain steps more, a flush ROW_US us per row (the H200: ~0.03 and ~1.5, "
                             "sessions 15 and 14); default: every step observed, nothing charged")
    parser.add_argument("--early", type=float, nargs=2, default=None, metavar=("TOKENS", "P"),
                        help="a reply's first TOKENS tokens accept each draft with probability P (and the "
                             "confidences sit around P there): replies whose openings are harder to draft")
    parser.add_argument("--calibrated", action="store_true",
                        help="accept each draft with the probability of its own confidence (a calibrated drafter "
                             "whose confidences carry information) instead of a constant --p-true; the confidences "
                             "sit around --p-true (or --early's P), so --p-conf is ignored")
    parser.add_argument("--opening-tokens", type=int, default=OPENING_TOKENS,
                        help="the proposer's opening_tokens (`OpeningPhase`; 0: a reply judged as one, as "
                             "before session 19)")
    parser.add_argument("--seeds", type=int, default=1,
                        help="independent runs (seeds 0..N-1): each cell then shows the mean ratio and its range "
                             "(session 17: one seed moved a policy change's cells by 2-4%% either way)")
    args = parser.parse_args()
    if args.opening_tokens < 0:
        parser.error(f"--opening-tokens: must be >= 0, got {args.opening_tokens}")
    if args.seeds < 1:
        parser.error(f"--seeds: must be >= 1, got {args.seeds}")
    if args.early is not None and (args.early[0] < 0 or not 0.0 <= args.early[1] <= 1.0):
        parser.error(f"--early: TOKENS >= 0 and P in [0, 1], got {args.early}")
    if args.features is not None and min(args.features) < 0:
        parser.error(f"--features: costs must be >= 0, got {args.features}")
    if args.k < 1 or min(args.concurrency) < 1 or args.batches < 1:
        parser.error(f"--k, --concurrency and --batches: must be >= 1, got {args.k}, {args.concurrency}, "
                     f"{args.batches}")
    for name, values in (("--p-true", args.p_true), ("--p-conf", [] if args.p_conf is None else [args.p_conf])):
        if not all(0.0 <= p <= 1.0 for p in values):
            parser.error(f"{name}: probabilities in [0, 1], got {values}")
    for name in ("sps.json", "spec_sps.json") + (("spec_k1_sps.json",) if args.k1 else ()):
        if not (args.profiles / name).is_file():
            parser.error(f"--profiles: {args.profiles} has no {name} (bench_dspark.py --save-sps writes them)")
    decode = SPSProfile.load(args.profiles / "sps.json")
    spec = SPSProfile.load(args.profiles / "spec_sps.json")
    measured_k = re.search(r"\bk=(\d+)", str(spec.meta.get("method", "")))
    if measured_k and int(measured_k.group(1)) != args.k:
        parser.error(f"--k: {args.k}, but {args.profiles / 'spec_sps.json'} was measured with k={measured_k.group(1)}")
    policies = {"k-round profile": (None, False)}   # label -> (short profile, full_round)
    charge = None
    if args.k1:
        short = SPSProfile.load(args.profiles / "spec_k1_sps.json")
        policies["with k=1 profile"] = (short, False)
        charge = VerifyRates(spec, args.k, short)
    if args.full_round:
        policies["full-round pricing"] = (None, True)
    for p_true in args.p_true:
        for label, (short, full_round) in policies.items():
            runs = [simulate(args, decode, spec, p_true, short, charge, seed, full_round) for seed in range(args.seeds)]
            print(f"p_true {p_true}, {label} | " + " | ".join(
                _cell(c, [run[i] for run in runs], args.k) for i, c in enumerate(args.concurrency)), flush=True)


def _cell(c: int, results: list[tuple[float, float, float]], k: int) -> str:
    """One concurrency's mean over the seeds (with the range of the policy's ratio when several)."""
    ratios, shares, fixed = zip(*results)
    spread = f" [{min(ratios):.3f}-{max(ratios):.3f}]" if len(ratios) > 1 else ""
    return (f"{c}: {sum(ratios) / len(ratios):.3f}{spread} ({100 * sum(shares) / len(shares):.1f}% drafted; "
            f"fixed-{k} {sum(fixed) / len(fixed):.3f})")


if __name__ == "__main__":
    main()
