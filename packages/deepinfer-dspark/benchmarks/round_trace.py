# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Per drafted round of confidence scheduling: what the pause policy weighed against what the
target accepted.

For each round `_plan_pause` judged: the batch, the expected accepted drafts (the verified
prefixes' survivals summed, as the policy reads them before scaling by the acceptance ratio),
the drafts verified, the drafts the target then accepted (from `commit`), the acceptance ratio
at the batch's bucket, the ledger's smoothed gain before and after the round, and the pause it
left. Written for the 1-2 request loads of session 18 on the H200: confidence drafted 23 rounds
of the one-request warm-up, judged a gain of 0.98 and paused, while fixed-3 ran at 1.14x plain
decoding on the same prompt. The first batch of each concurrency is the benchmark's excluded
warm-up (its first conversation alone), as in `bench_dspark.py`.

With `--fixed K` (default 7), a fixed-K engine then runs the same batches, and its accepted
drafts are printed by reply position (`by_position`): whether the first rounds of a reply, the
ones confidence judged, accept fewer drafts than the rest.

Usage:
    python3 round_trace.py --target T.gguf --drafter DIR --sps sps.json --spec-sps spec_sps.json \\
        [--concurrency 1 2] [--calls 3] [--fixed 7]
"""

from __future__ import annotations

import argparse


def trace(llm, batches: list, generate) -> list[dict]:
    """Runs `generate(batch)` for each batch, recording every drafted round that confidence
    scheduling opens (`acceptance.begin`); returns one dict per round (keys: call, batch, verified,
    accepted, and from `_plan_pause`, when it judged the round: expected, ratio, gain_before,
    gain, pause (of the ledger that judged it: the openings' when `opening`, see `OpeningPhase`),
    and the round's own priced gain (round_gain: tau * round rate / plain rate), tau
    (emitted tokens expected), round_ms and plain_ms (the profiles' round and plain-step times);
    None for a round it did not judge, e.g. a re-timing run). `accepted` sums the
    drafts accepted by the round's requests, as `commit` reports them (a request that ends before
    its commit counts none)."""
    proposer = llm.engine.speculative.proposer
    proposer = getattr(proposer, "inner", proposer)   # DSpark's own rounds, inside `LookupAssist`
    acceptance = proposer.acceptance
    rounds: list[dict] = []
    plan, commit, begin = proposer._plan_pause, proposer.commit, acceptance.begin
    current = {"call": 0}

    def traced_begin(batch, entries, opening=False):
        begin(batch, entries, opening)
        rounds.append(dict(call=current["call"], batch=batch, verified=sum(e[2] for e in entries), accepted=0,
                           expected=None, ratio=None, gain_before=None, gain=None, pause=None, opening=None,
                           round_gain=None, tau=None, round_ms=None, plain_ms=None))

    def traced_plan(expected, lengths, batch, partial=False, opening=False, ids=None):
        ledger = proposer.openings.ledger if opening else proposer.pauses
        before = ledger.gain(batch)
        costs, seen = proposer.costs, {}
        if costs is not None:   # the round's own gain and rate, as `_plan_pause` prices it
            def traced_gain(b, tokens, rate=None):
                seen.update(tokens=tokens, rate=costs.round_rate(b) if rate is None else rate,
                            plain=costs.plain_rate(b))
                return type(costs).gain(costs, b, tokens, rate)
            costs.gain = traced_gain
        try:
            plan(expected, lengths, batch, partial, opening=opening, ids=ids)
        finally:
            if costs is not None:
                del costs.gain
        if rounds:   # the round `begin` just opened
            own = None if not seen else seen["tokens"] * seen["rate"] / seen["plain"]
            rounds[-1].update(expected=float(expected), ratio=acceptance.ratio(batch, opening), gain_before=before,
                              gain=ledger.gain(batch), pause=ledger.left(batch), opening=opening,
                              round_gain=own, tau=seen.get("tokens"), round_ms=1e3 / seen["rate"] if seen else None,
                              plain_ms=batch * 1e3 / seen["plain"] if seen else None)

    def traced_commit(request_id, num_tokens):
        entry = acceptance._open.get(request_id)   # (tokens before, verified, survival) of the open round
        if entry is not None and rounds:
            rounds[-1]["accepted"] += min(max(num_tokens - entry[0] - 1, 0), entry[1])
        commit(request_id, num_tokens)

    proposer._plan_pause, proposer.commit, acceptance.begin = traced_plan, traced_commit, traced_begin
    try:
        for index, batch in enumerate(batches):
            current["call"] = index
            generate(batch)
    finally:
        proposer._plan_pause, proposer.commit, acceptance.begin = plan, commit, begin
    return rounds


def by_position(llm, batches: list, generate, width: int = 32) -> dict[int, list[int]]:
    """Runs `generate(batch)` for each batch and sums the drafted rounds of any DSpark proposer
    (fixed-length or confidence) by the reply position of their first draft (`DraftRequest.step`),
    in buckets of `width` tokens: bucket -> [rounds, drafts verified, drafts accepted]. Tells
    whether a reply's first rounds accept fewer drafts than its later ones."""
    proposer = llm.engine.speculative.proposer
    proposer = getattr(proposer, "inner", proposer)   # DSpark's own rounds, inside `LookupAssist`
    propose, commit = proposer.propose, proposer.commit
    open_rounds: dict[str, tuple[int, int, int]] = {}   # request id -> (bucket, tokens before, verified)
    sums: dict[int, list[int]] = {}

    def traced_propose(requests):
        drafts = propose(requests)
        for r, d in zip(requests, drafts):
            if d.token_ids:
                open_rounds[r.request_id] = (r.step // width, len(r.token_ids), len(d.token_ids))
        return drafts

    def traced_commit(request_id, num_tokens):
        entry = open_rounds.pop(request_id, None)
        if entry is not None:
            bucket, before, verified = entry
            row = sums.setdefault(bucket, [0, 0, 0])
            row[0] += 1
            row[1] += verified
            row[2] += min(max(num_tokens - before - 1, 0), verified)   # emitted: accepted + 1
        commit(request_id, num_tokens)

    proposer.propose, proposer.commit = traced_propose, traced_commit
    try:
        for batch in batches:
            generate(batch)
    finally:
        proposer.propose, proposer.commit = propose, commit
    return dict(sorted(sums.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="GGUF file or HF folder of the target")
    parser.add_argument("--drafter", required=True, help="DSpark checkpoint folder")
    parser.add_argument("--sps", required=True, help="plain-decode SPS profile (bench_dspark.py --save-sps)")
    parser.add_argument("--spec-sps", required=True, help="speculative-round SPS profile (spec_<name>)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--calls", type=int, default=3, help="measured batches per concurrency")
    parser.add_argument("--k", type=int, default=7, help="num_speculative_tokens (the profile's k)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--fixed", type=int, default=7, metavar="K",
                        help="also run fixed-K drafting on the same batches and print both engines' accepted "
                             "drafts by reply position (0: no fixed-K engine)")
    args = parser.parse_args()
    if args.calls < 1 or min(args.concurrency) < 1 or args.fixed < 0:
        parser.error("--calls and --concurrency: must be >= 1; --fixed: >= 0")
    from deepinfer_core import LLM, SamplingParams

    from deepinfer_dspark.sps import SPSProfile
    from deepinfer_dspark.train.data import build_prompts, stdlib_docstrings

    spec = {"method": "dspark", "model": args.drafter, "num_speculative_tokens": args.k, "scheduling": "confidence",
            "sps_profile": SPSProfile.load(args.spec_sps), "decode_profile": SPSProfile.load(args.sps)}
    llm = LLM(args.target, speculative_config=spec, max_num_seqs=max(args.concurrency), kv_cache_memory=8 << 30)
    pool = [[{"role": "user", "content": p}]   # bench_dspark.py's pool (seed 12345)
            for p in build_prompts(stdlib_docstrings(max(args.concurrency), seed=12345))]
    params = SamplingParams(temperature=0, max_tokens=args.max_tokens)
    fixed_spec = {"method": "dspark", "model": args.drafter, "num_speculative_tokens": args.fixed}
    fixed = None if not args.fixed else LLM(args.target, speculative_config=fixed_spec,
                                            max_num_seqs=max(args.concurrency), kv_cache_memory=8 << 30)
    for c in args.concurrency:
        batches = [pool[:1]] + [pool[:c]] * args.calls
        for r in trace(llm, batches, lambda batch: llm.chat(batch, params)):
            judged = ("not judged" if r["expected"] is None else
                      f"{'opening' if r['opening'] else 'body'} expected {r['expected']:.2f} ratio {r['ratio']:.2f} "
                      f"gain {r['gain_before'] or 0:.3f}->"
                      f"{r['gain']:.3f} pause {r['pause']}" +
                      ("" if r["round_gain"] is None else
                       f" round: tau {r['tau']:.2f} {r['round_ms']:.2f} ms vs plain {r['plain_ms']:.2f} ms"
                       f" gain {r['round_gain']:.3f}"))
            print(f"c={c} call {r['call']} B={r['batch']} verified {r['verified']} accepted {r['accepted']} {judged}",
                  flush=True)
        if fixed is not None:   # the same batches: accepted drafts by reply position
            for row in by_position(fixed, batches, lambda batch: fixed.chat(batch, params)).items():
                bucket, (rounds, verified, accepted) = row
                print(f"c={c} fixed-{args.fixed} reply tokens {32 * bucket}-{32 * bucket + 31}: {rounds} rounds, "
                      f"{verified} verified, {accepted} accepted ({accepted / rounds:.2f} a round)", flush=True)


if __name__ == "__main__":
    main()
