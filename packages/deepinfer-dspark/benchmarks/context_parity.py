# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Does a paused engine's drafter see the context an always-drafting engine's sees?

Session 24 (BENCHMARKS.md) measured, at 1 request on one reply, 3.7 tokens a round for fixed-7
and 2.1-3.0 for confidence scheduling's drafted rounds, which come after pauses (features
buffered in `PendingContext`, projected by the next round's flush). Greedy output stays exact
either way (verification is lossless), so a context built wrongly while paused would show only
as lower acceptance.

Two engines with the same drafter generate the same greedy replies:

  - `always`: fixed-length DSpark, drafting and verifying all k every round (features
    projected as they come);
  - `paused`: confidence scheduling on profiles under which drafting always pays but verifying
    more than 3 drafts needs confident ones (so rounds verify 3-k drafts: the verification
    graphs pad the shorter ones), told after every `--draft-run`-th drafted round to pause
    `--pause` rounds at that batch size (`PauseLedger.pause`, as a measured loss does), so
    its context is built from buffered features and flushes.

After each reply (contexts kept: `remove` is a no-op) the drafter's context K/V of both engines
is compared position by position, and the drafts of rounds both engines ran from the same
anchor position are compared (tokens and confidences). Equal contexts differ only by the
projection's rounding (one batched projection against per-step ones).

With `--plain` both replies are also compared with plain decoding's; `--dtype float32` removes
the bfloat16 near-ties of a random target (session 24 on the H200: in bfloat16 two of four
replies of both speculative engines left plain decoding's at tokens 90-125; in float32 all
matched, and the contexts agreed to 2.5e-6).

Usage (CPU or GPU; a GGUF or HF target; the drafter random unless given):
    python3 packages/deepinfer-dspark/benchmarks/context_parity.py --target T.gguf --drafter D \
        --requests 4 --max-tokens 128
    python3 packages/deepinfer-dspark/benchmarks/context_parity.py --target HF_FOLDER --plain --dtype float32
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import torch


def recorder(proposer, log: dict) -> None:
    """Wraps `proposer.runner.draft`: log[(request_id, anchor_position)] = (tokens, confidences)."""
    original = proposer.runner.draft

    def draft(requests, num_tokens, **kw):   # (`while_running`: the proposer's bookkeeping hook)
        outs = original(requests, num_tokens, **kw)
        for r, o in zip(requests, outs):
            conf = None if o.confidences is None else o.confidences.float().cpu()
            log[(r.request_id, r.anchor_position)] = (o.tokens.cpu().tolist(), conf)
        return outs

    proposer.runner.draft = draft


def pauser(proposer, every: int, length: int) -> Counter:
    """After every `every`-th drafted round, pause `length` rounds at that batch size. Returns the
    counts of the verified lengths of the rounds' drafts (filled as they run)."""
    original = proposer.propose
    count = [0]
    verified: Counter = Counter()

    def propose(requests):
        drafts = original(requests)
        verified.update(len(d.token_ids) for d in drafts)
        if any(d.token_ids for d in drafts):
            count[0] += 1
            if count[0] % every == 0:
                proposer.pauses.pause(len(requests), length)
        return drafts

    proposer.propose = propose
    return verified


def compare_contexts(a, b, request_a: str, request_b: str) -> tuple[int, int, float, int]:
    """(positions in a, in b, max |K/V difference| over the common positions, first position whose
    difference exceeds 5% of that position's largest |K/V|, or -1)."""
    if request_a not in a.runner.context or request_b not in b.runner.context:   # never observed (a gap)
        held = [r in p.runner.context for p, r in ((a, request_a), (b, request_b))]
        return int(held[0]), int(held[1]), 0.0, -1
    ka, va = a.runner.context_of(request_a)
    kb, vb = b.runner.context_of(request_b)
    n = min(ka.shape[1], kb.shape[1])
    da = torch.maximum((ka[:, :n] - kb[:, :n]).abs().float().amax(dim=(0, 2, 3)),
                       (va[:, :n] - vb[:, :n]).abs().float().amax(dim=(0, 2, 3)))
    scale = torch.maximum(ka[:, :n].abs().float().amax(dim=(0, 2, 3)), va[:, :n].abs().float().amax(dim=(0, 2, 3)))
    bad = (da > 0.05 * scale.clamp_min(1e-6)).nonzero()
    return ka.shape[1], kb.shape[1], float(da.max()) if n else 0.0, int(bad[0, 0]) if bad.numel() else -1


def run_pair(always, paused, inputs: list, params, draft_run: int, pause: int,
             chat: bool, pause_first: int = 0) -> tuple[list[dict], Counter]:
    """Generates each of `inputs` (one at a time) on both engines (`LLM`s: `always` drafting every
    round, `paused` with forced pauses, see the module docstring) and compares them.

    Returns:
        (one dict per reply: `tokens`, `same_reply`, context positions `na`/`nb`, `diff` (max |K/V|
        difference), `first_bad` (-1 when none), drafted rounds `ra`/`rb`, `common` anchors,
        `tokens_equal`, `conf_diff`; the paused engine's verified lengths). With `pause_first`, the
        paused engine is paused that many rounds before each reply, so its prompt's features are
        buffered too (an engine paused at the load when a request arrives).
    """
    engines = {"always": always.engine.speculative.proposer, "paused": paused.engine.speculative.proposer}
    logs = {name: {} for name in engines}
    for name, proposer in engines.items():
        proposer.runner.remove = lambda request_id: None   # keep the contexts to compare (the rest forgets)
        recorder(proposer, logs[name])
    verified = pauser(engines["paused"], draft_run, pause)
    results = []
    for item in inputs:
        if pause_first:
            engines["paused"].pauses.pause(1, pause_first)
        done = {name: (llm.chat([item], params) if chat else llm.generate([item], params))[0]
                for name, llm in (("always", always), ("paused", paused))}
        outs = {name: out.outputs[0].token_ids for name, out in done.items()}
        with torch.inference_mode():
            engines["paused"]._flush()
        ids = {name: out.request_id for name, out in done.items()}
        na, nb, diff, first_bad = compare_contexts(engines["always"], engines["paused"], ids["always"], ids["paused"])
        la = {pos: v for (rid, pos), v in logs["always"].items() if rid == ids["always"]}
        lb = {pos: v for (rid, pos), v in logs["paused"].items() if rid == ids["paused"]}
        common = sorted(set(la) & set(lb))
        conf_diff = max((float((la[p][1] - lb[p][1]).abs().max()) for p in common if la[p][1] is not None),
                        default=0.0)
        results.append(dict(replies=outs, tokens=len(outs["always"]), same_reply=outs["always"] == outs["paused"],
                            na=na, nb=nb, diff=diff, first_bad=first_bad, ra=len(la), rb=len(lb), common=len(common),
                            tokens_equal=sum(la[p][0] == lb[p][0] for p in common), conf_diff=conf_diff))
    return results, verified


def mismatches(result: dict) -> int:
    """A reply's mismatches: context off somewhere, replies different, drafts different."""
    return (result["first_bad"] >= 0) + (not result["same_reply"]) + (result["tokens_equal"] < result["common"])


def specs(drafter: str, k: int) -> tuple[dict, dict]:
    """(fixed-k DSpark, confidence scheduling on profiles under which drafting always pays (plain
    steps at 1 a second), so only forced pauses pause it, and rounds verifying more than 3 drafts
    are slower (shorter prefixes: the verification graphs pad them))."""
    from deepinfer_dspark.sps import SPSProfile

    fixed = {"method": "dspark", "model": drafter, "num_speculative_tokens": k}
    paused = {**fixed, "scheduling": "confidence", "decline_features": False, "prompt_lookup_min": 0,
              "sps_profile": SPSProfile([1, 4, 1 + k, 1 << 20], [900.0, 900.0, 850.0, 850.0]),
              "decode_profile": SPSProfile([1, 1 << 20], [1.0, 1.0])}
    return fixed, paused


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True, help="GGUF file or HF folder")
    parser.add_argument("--drafter", default=None, help="DSpark checkpoint; default: random (HF folder targets only)")
    parser.add_argument("--k", type=int, default=7)
    parser.add_argument("--requests", type=int, default=4, help="replies, generated one at a time")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--draft-run", type=int, default=3, help="drafted rounds between pauses")
    parser.add_argument("--pause", type=int, default=6, help="rounds of each pause")
    parser.add_argument("--pause-first", type=int, default=0,
                        help="rounds the paused engine is paused before each reply (its prompt's features buffered)")
    parser.add_argument("--kv-cache-gib", type=float, default=2.0)
    parser.add_argument("--dtype", default=None, help="engine dtype (e.g. float32: no bfloat16 near-ties)")
    parser.add_argument("--plain", action="store_true", help="also compare both replies with plain decoding's")
    args = parser.parse_args()

    from deepinfer_core import LLM, SamplingParams
    from deepinfer_dspark.train.data import build_prompts, stdlib_docstrings

    drafter = args.drafter
    if drafter is None:
        if not Path(args.target).is_dir():
            parser.error("--drafter: needed with a GGUF target (a random drafter is built for HF folders)")
        from bench_paused import random_drafter, scratch_dir
        drafter = str(random_drafter(Path(args.target), args.k, scratch_dir("dspark-random-")))
    kw = {"kv_cache_memory": int(args.kv_cache_gib * (1 << 30)), "max_num_seqs": 4}
    if args.dtype is not None:
        kw["dtype"] = args.dtype
    fixed, paused_spec = specs(drafter, args.k)
    always = LLM(args.target, speculative_config=fixed, **kw)
    paused = LLM(args.target, speculative_config=paused_spec, **kw)
    pool = [[{"role": "user", "content": p}] for p in build_prompts(stdlib_docstrings(args.requests, seed=12345))]
    params = SamplingParams(temperature=0, max_tokens=args.max_tokens)
    results, verified = run_pair(always, paused, pool[: args.requests], params, args.draft_run, args.pause, chat=True,
                                 pause_first=args.pause_first)
    for i, r in enumerate(results):
        print(f"reply {i}: {r['tokens']} tokens, replies equal {r['same_reply']}; context positions "
              f"{r['na']} / {r['nb']}, max |dK/V| {r['diff']:.3g}, first position off by >5%: {r['first_bad']}; "
              f"rounds drafted {r['ra']} / {r['rb']}, from common anchors {r['common']}: tokens equal "
              f"{r['tokens_equal']}, max |d confidence| {r['conf_diff']:.3g}", flush=True)
    worst = sum(mismatches(r) for r in results)
    for llm in (always, paused):
        llm.close()
    if args.plain:   # the replies of both engines against plain decoding's, after them (one engine alive)
        plain = LLM(args.target, **kw)
        for i, chat in enumerate(pool[: args.requests]):
            ref = plain.chat([chat], params)[0].outputs[0].token_ids
            same = {name: r == ref for name, r in results[i]["replies"].items()}
            first = {name: next((j for j, (a, b) in enumerate(zip(r, ref)) if a != b), None)
                     for name, r in results[i]["replies"].items()}
            print(f"reply {i} against plain decoding: equal {same}, first differing token {first}", flush=True)
            worst += not all(same.values())
        plain.close()
    print(f"paused engine's verified lengths (0: a paused round): {dict(sorted(verified.items()))}", flush=True)
    print("parity: OK" if worst == 0 else f"parity: {worst} mismatches", flush=True)
    return 0 if worst == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
