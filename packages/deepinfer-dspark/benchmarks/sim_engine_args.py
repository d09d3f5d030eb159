# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The command line of `sim_engine_calls.py`: its flags, each a knob of the simulated engine or of
the proposer it runs (most a `speculative_config` key), parsed and checked."""

from __future__ import annotations

import argparse
from pathlib import Path

EARLY = (30, 0.5)   # `--early` by default: the drafters of sessions 18-20 (openings accept less)


def parse(description: str, argv: list[str] | None = None) -> argparse.Namespace:
    """The flags of `argv` (the process's when None), `--plan` as [(concurrency, batches)].
    Exits with a message naming the flag on a bad value (argparse's `error`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--profiles", type=Path, required=True, help="folder with sps.json and spec_sps.json")
    parser.add_argument("--p", type=float, nargs="+", default=[0.66, 0.7, 0.75],
                        help="acceptance: the drafts' confidence level, each accepted with its confidence")
    parser.add_argument("--k", type=int, default=7)
    parser.add_argument("--plan", default="1:12,2:12,8:12,32:4,64:3", help="concurrency:batches, in order")
    parser.add_argument("--equal", action="store_true", help="every reply 128 tokens (default: 30-128)")
    parser.add_argument("--capped", type=float, default=None, metavar="SHARE",
                        help="a SHARE of the replies reach the 128-token limit, the others 18-127 tokens (the H100's "
                             "batches at 8 requests, session 69: ~0.7)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--capture", type=float, default=0.02, help="plain steps a captured step costs more")
    parser.add_argument("--flush", type=float, default=1.5)
    parser.add_argument("--flush-per-pair", type=float, default=0.0,
                        help="plain steps a flush costs more per buffered (request, step) pair")
    parser.add_argument("--sync", type=float, default=0.9)
    parser.add_argument("--round-cost", type=float, default=1.0, metavar="FACTOR",
                        help="a drafted round costs FACTOR times the profile's round, which the proposer still "
                             "reads (the H200, session 27: rounds at 8 requests took 1.2-1.5x the profile's in "
                             "benchmark engines); fixed-k's column is charged the same")
    parser.add_argument("--priced", action="store_true",
                        help="the proposer reads the round profile scaled to --round-cost (rounds priced exactly)")
    parser.add_argument("--measure-rounds", action="store_true",
                        help="the proposer times its drafted rounds on the simulated clock (`measure_round_times`)")
    parser.add_argument("--plain-read", type=float, default=1.0, metavar="FACTOR",
                        help="the proposer reads a decode profile FACTOR times slower than the plain steps the "
                             "clock charges (the H200, session 33: 1.11-1.57 at 5-32 requests)")
    parser.add_argument("--min-gain", type=float, default=1.0, metavar="G",
                        help="speculative_config.min_gain: the gain a drafted round must clear (1.0: break-even)")
    parser.add_argument("--settled-requests", type=int, default=0, metavar="N",
                        help="PausePolicy.settled_requests: drafted requests a settled average holds (0: rounds alone)")
    parser.add_argument("--bound-only", type=int, default=0, metavar="B",
                        help="speculative_config.bound_only: up to B requests the ledgers pause nothing (the engine's "
                             "default is 1 since session 45; 0 here, as the results recorded before it ran)")
    parser.add_argument("--min-replies", type=int, default=0, metavar="N",
                        help="PausePolicy.min_replies: replies whose body rounds `expected_loss` waits for (0: off)")
    parser.add_argument("--overlap-bookkeeping", action="store_true",
                        help="speculative_config.overlap_bookkeeping: each drafted round judged (and its commits "
                             "folded) during the next drafted round (`LateBookkeeping`: decisions a round later)")
    parser.add_argument("--lease-rounds", type=int, default=0, metavar="N",
                        help="speculative_config.lease_rounds: lean rounds between sample rounds where a load wins "
                             "by a wide margin (`DraftingLease`; 0: off, as the results recorded before it ran)")
    parser.add_argument("--bound-only-untimed", action="store_true",
                        help="speculative_config.bound_only_untimed: with --measure-rounds, up to --bound-only "
                             "requests the rounds are priced on the profiles (the engine's default since session 53)")
    parser.add_argument("--measure-plain", action="store_true",
                        help="the proposer times plain steps over stretches on the simulated clock "
                             "(`measure_plain_steps`)")
    parser.add_argument("--trace", type=int, default=0)
    parser.add_argument("--tail-rounds", action="store_true",
                        help="with --lookup: DSpark's rounds judged with the drain's tail weights (`tail_rounds`)")
    parser.add_argument("--stragglers", action="store_true",
                        help="a draining batch's rounds judged by its straggler (`judge_stragglers`, "
                             "opt-in since session 41)")
    parser.add_argument("--age-rounds", type=int, default=None, metavar="N",
                        help="speculative_config.acceptance_age_rounds: rounds over which the measured acceptance's "
                             "weight falls by e (default: full_acceptance.AGE_ROUNDS)")
    parser.add_argument("--probe-share", type=float, default=None, metavar="SHARE",
                        help="speculative_config.probe_share: the share of the time probes may lose at a losing "
                             "load (default: draft_costs.PROBE_SHARE)")
    parser.add_argument("--young-runs", action="store_true",
                        help="speculative_config.young_runs: a young bucket drafts on until its ledger settles")
    parser.add_argument("--run-noise", action="store_true",
                        help="speculative_config.run_noise: a draining round scaled by its run's slowest request")
    parser.add_argument("--rescale", action="store_true",
                        help="speculative_config.rescale_stragglers: a ledger's average held at its bucket's straggler "
                             "factor now")
    parser.add_argument("--frontier", action="store_true",
                        help="speculative_config.judge_frontier: with --stragglers the factor capped by the least "
                             "advanced request's measured share (session 80's candidate)")
    parser.add_argument("--frontier-by-round", action="store_true",
                        help="with --frontier, each round filed at its own bucket instead of each run at the bucket "
                             "it began at (`Frontier.by_run` False)")
    parser.add_argument("--share-floor", type=float, default=None, metavar="SHARE",
                        help="speculative_config.probe_share_floor: repeated settled losses halve the probes' share "
                             "down to this")
    parser.add_argument("--probe-headroom", type=float, default=None, metavar="H",
                        help="speculative_config.probe_headroom: the probes' share scaled by the bounds' gain over "
                             "plain decoding, (gain - 1) / H clamped to [1/16, 1] (session 82's candidate; the "
                             "engine's default 0.5 since session 83, off here unless given)")
    parser.add_argument("--probe-transition", action="store_true",
                        help="speculative_config.probe_transition: a timed probe's overhead counts its transition")
    parser.add_argument("--opening-runs", action="store_true",
                        help="speculative_config.opening_runs: where the body loses, an opening round's gain scaled "
                             "by its run's share of time (session 63's candidate)")
    parser.add_argument("--resume-bound", action="store_true",
                        help="speculative_config.resume_bound: above bound_only the acceptance bound also pays a "
                             "resumption over a 32-round run (session 77's candidate)")
    parser.add_argument("--max-probe-every", type=int, default=256, metavar="N",
                        help="speculative_config.max_probe_every: the longest backoff after losses, in rounds "
                             "(the factory's default 256)")
    parser.add_argument("--probe-every", type=int, default=8, metavar="N",
                        help="speculative_config.probe_every: a loss's first pause and the bounds' re-judgement, in "
                             "rounds (the factory's default 8; session 75's candidate 16)")
    parser.add_argument("--drained", action="store_true",
                        help="drafting ruled out where drained batches that drafted lost (`drained_batches`, "
                             "session 64's candidate)")
    parser.add_argument("--no-drain", action="store_true",
                        help="batches not marked draining (`LLM.generate` marks them: `--lookup`'s tail weights)")
    parser.add_argument("--closed", action="store_true",
                        help="each concurrency's requests as one stream, C running at a time (a closed loop; "
                             "fixed-k's column is then not computed)")
    parser.add_argument("--early", type=float, nargs=2, default=EARLY, metavar=("TOKENS", "P"),
                        help="a reply's first TOKENS tokens drafted at confidence level P and accepted with it "
                             "(default 30 0.5: session 19's drafter; 0 0: openings as the rest, as session 41's "
                             "K = 3 drafter on the H200: 0.36 accepted a draft in the first 32 tokens, 0.44 after)")
    parser.add_argument("--hard", type=float, nargs=2, default=None, metavar=("SHARE", "FACTOR"),
                        help="a SHARE of the replies accept each draft with FACTOR times its confidence "
                             "(fixed-k's column ignores it)")
    parser.add_argument("--loops", type=float, nargs=3, default=None, metavar=("SHARE", "FROM", "TO"),
                        help="a SHARE of the replies loop from a reply position in [FROM, TO]: drafts accepted "
                             "around 0.95 from there (see the module docstring)")
    parser.add_argument("--lookup", type=int, default=0, metavar="N",
                        help="confidence scheduling with prompt lookup where it drafts nothing "
                             "(`prompt_lookup_min` N; the replies' tokens: `Texts`); 0: off")
    parser.add_argument("--breakdown", action="store_true",
                        help="per concurrency, each overhead's share of plain decoding's time (mean over seeds)")
    args = parser.parse_args(argv)
    try:
        args.plan = [tuple(int(x) for x in item.split(":")) for item in args.plan.split(",")]
    except ValueError:
        parser.error(f"--plan: expected concurrency:batches,..., got {args.plan!r}")
    if args.seeds < 1 or any(c < 1 or n < 1 for c, n in args.plan):
        parser.error("--seeds and --plan values: must be >= 1")
    if args.capped is not None and (args.equal or not 0.0 <= args.capped <= 1.0):
        parser.error(f"--capped: a share in [0, 1], without --equal; got {args.capped}")
    return args
