# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Prompt lookup replayed over real greedy replies in a closed loop, on the H200's step costs.

At 1 request on the H200 (session 29, BENCHMARKS.md) confidence-scheduled DSpark with a weak
drafter drafts almost nothing, so what `prompt_lookup_min` (`LookupAssist`) adds is the whole
difference, and `ngram-7` (prompt lookup every step, n-grams of 4 down to 1) beat it: 1.14-1.22x
against 1.07-1.13x. This script replays both over replies that `record_replies.py` saved (the
target's own greedy text, so a lookup draft is accepted while it is the reply's next tokens), as
`bench_dspark.py --closed-loop 4` runs them: calls of 4 C replies through C slots, a reply
admitted as one finishes, the proposer kept across calls (`--batch-form`: calls of C replies, as
`bench_dspark.py` without `--closed-loop`, so each call ends in a tail of fewer requests):

  - `ngram`: `NgramProposer(1, 4)` for every running request every step, as core's `ngram`
    method drafts;
  - `lookup N`: `LookupAssist(N)` over `NoDrafter` (`ngram` with `scheduling: load_aware`; what
    `prompt_lookup_min` adds to a confidence-scheduled DSpark that drafts nothing), asked what the
    engine asks, in its order (`sim_engine_calls.run_batch`: `dormant_rounds` through core's
    `DormantSteps`, `idle_rounds`, `idle_round`, `propose`, `commit`, `remove`): its searches,
    stretches, match classes and `pays`.

A step at n running requests costs what the H200's step logs measured (session 30,
`round_costs.py`): a plain step `--plain` ms at 1 request, scaled by the decode profile to n; a
step with drafts that plus `RoundCosts.round(n, in a run)` such steps (`--charged`; a round after
a plain step waits for it); the plain step right after a run that less `RoundCosts.saving(n)`.
Prefills are not charged. `--priced` sets what `LookupAssist.pays` believes, separately.
Printed per concurrency and policy: plain decoding's time over the policy's (the mean of the
calls' ratios, as `bench_dspark.py`'s paired ratio, and over all calls), rounds, accepted drafts a
round.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/lookup_replay.py --replies replies.json \
        --profiles benchmarks/results/h200-2026-12-02f/run5-closed-lookup --concurrency 1 2 8 \
        --lookup 2 --priced 0.67:0.92:0.46 1.15:0:0.35
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # (loaded by path in the tests)
from deepinfer_core.engine.dormant_steps import DormantSteps  # noqa: E402
from deepinfer_core.interfaces import DraftRequest  # noqa: E402

import deepinfer_dspark.lookup_assist as lookup_assist  # noqa: E402
from deepinfer_dspark.lookup_assist import LookupAssist  # noqa: E402
from deepinfer_dspark.round_costs import H200_ROUND_COSTS, RoundCosts  # noqa: E402
from deepinfer_dspark.ngram import NgramProposer  # noqa: E402
from deepinfer_dspark.no_drafter import NoDrafter  # noqa: E402
from deepinfer_dspark.sps import SPSProfile  # noqa: E402


class Costs:
    """Milliseconds charged to a policy's steps; `rounds` and `accepted` count its rounds, and
    `search_ms` is charged for each request the policy searched (`Plain.searched`)."""

    def __init__(self, decode: SPSProfile, plain: float, charged: RoundCosts, search_ms: float = 0.0) -> None:
        self.decode, self.plain, self.charged, self.search_ms = decode, plain, charged, search_ms
        self.ms, self.rounds, self.accepted, self.last_round = 0.0, 0, 0, False

    def step(self, running: int, drafted: bool, accepted: int = 0) -> None:
        plain = self.plain * self.decode.at(1) / self.decode.at(running)
        if drafted:
            plain += self.plain * self.charged.round(running, self.last_round)
        elif self.last_round:
            plain -= self.plain * self.charged.saving(running)
        self.ms += plain
        self.rounds += drafted
        self.accepted += accepted
        self.last_round = drafted


def accepted_of(drafts: list[int], truth: list[int]) -> int:
    """Drafts accepted by greedy verification: the leading ones equal to the reply's next tokens."""
    return next((i for i, (a, b) in enumerate(zip(drafts, truth)) if a != b), min(len(drafts), len(truth)))


class Plain:
    """No drafts (plain decoding's time)."""

    def track(self, request_id: str, ids: list[int]) -> None:
        pass

    def start(self, running: int) -> None:
        pass

    def drafts(self, asks: list[DraftRequest]) -> list[list[int]]:
        return []

    def after(self, running: int) -> None:
        pass

    def commit(self, request_id: str, num_tokens: int) -> None:
        pass

    def remove(self, request_id: str) -> None:
        pass

    def searched(self) -> int:
        """Requests searched since the last call (then zero)."""
        return 0


class Ngram(Plain):
    """Prompt lookup for every running request every step (core's `ngram` method)."""

    def __init__(self) -> None:
        self.ngram = NgramProposer(1, 4)

    def drafts(self, asks: list[DraftRequest]) -> list[list[int]]:
        return [self.ngram.propose(a.request_id, a.token_ids, a.max_tokens) for a in asks]


class Lookup(Plain):
    """`LookupAssist` over `NoDrafter`, asked in the engine's order."""

    def __init__(self, k: int, min_n: int, decode: SPSProfile, check_every: int,
                 priced: RoundCosts = H200_ROUND_COSTS, tail: bool = True,
                 search_budget: float = lookup_assist.SEARCH_BUDGET) -> None:
        self.proposer = LookupAssist(NoDrafter(k, decode), min_n, check_every, priced, tail,
                                     search_budget=search_budget)
        self.proposer.draining(True)   # each call is an `LLM.generate` that drains what it added
        self.dormant, self.due, self.quiet = DormantSteps(self.proposer), False, False
        self._searched, search = 0, self.proposer._search

        def counted(batch: int, request_ids=None) -> None:   # (`_search` notes each search in `_checked`)
            before = dict(self.proposer._checked)
            search(batch, request_ids)
            self._searched += sum(before.get(rid) != known for rid, known in self.proposer._checked.items())
        self.proposer.__dict__["_search"] = counted   # (an instance attribute, past the wrapper's forwarding)

    def searched(self) -> int:
        count, self._searched = self._searched, 0
        return count

    def track(self, request_id: str, ids: list[int]) -> None:
        self.proposer.track(request_id, ids)

    def start(self, running: int) -> None:
        self.quiet = self.dormant.step(running)   # the prefill step: no drafts
        self.after(running)

    def drafts(self, asks: list[DraftRequest]) -> list[list[int]]:
        found = [d.token_ids for d in self.proposer.propose(asks)] if self.due else []
        self.quiet = False if any(found) else self.dormant.step(len(asks))
        return found

    def after(self, running: int) -> None:
        self.due = False
        if self.quiet:
            self.dormant.ran(running)
        elif running:
            if self.proposer.idle_rounds() > 0:
                self.proposer.idle_round(running)
            else:
                self.due = True
        else:
            self.dormant.settle()

    def commit(self, request_id: str, num_tokens: int) -> None:
        self.proposer.commit(request_id, num_tokens)

    def remove(self, request_id: str) -> None:
        self.proposer.remove(request_id)


def replay(replies: list[dict], slots: int, k: int, policy: Plain, costs: Costs, first: int = 0) -> float:
    """One call: `replies` through `slots` slots, each admitted as one finishes (its prefill in
    the next step, not charged); returns the call's ms."""
    began, queue, live = costs.ms, list(range(len(replies))), {}   # request -> [reply, ids, position]
    views = {n: list(replies[n]["prompt"]) for n in queue}
    for n, ids in views.items():   # the engine tracks every request as it is added, waiting or not
        policy.track(f"r{first + n}", ids)

    def admit() -> None:
        while queue and len(live) < slots:
            n = queue.pop(0)
            reply, ids = replies[n]["reply"], views[n]
            ids.extend(reply[:1])   # its prefill's token
            live[f"r{first + n}"] = [reply, ids, 1]

    admit()
    policy.start(len(live))
    while live:
        asks = [DraftRequest(rid, list(ids), min(k, len(reply) - pos - 1), 0.0, 0, 1.0, 0.0, 0, pos)
                for rid, (reply, ids, pos) in live.items()]
        found = policy.drafts(asks)
        accepted_all = 0
        for i, (rid, state) in enumerate(list(live.items())):
            reply, ids, pos = state
            drafts = found[i] if i < len(found) else []
            accepted = accepted_of(drafts, reply[pos:]) if drafts else 0
            if drafts:
                policy.commit(rid, len(ids) + 1 + accepted)
            ids.extend(reply[pos:pos + 1 + accepted])
            state[2] = pos + 1 + accepted
            accepted_all += accepted
        costs.step(len(asks), any(found), accepted_all)
        costs.ms += costs.search_ms * policy.searched()
        for rid in [rid for rid, (reply, _, pos) in live.items() if pos >= len(reply)]:
            del live[rid]
            policy.remove(rid)
        policy.after(len(live))
        admit()
    costs.ms += costs.search_ms * policy.searched()
    costs.last_round = False   # (the next call's prefill runs between)
    return costs.ms - began


def run(replies: list[dict], slots: int, k: int, make, costs: Costs, per_call: int = 4) -> list[float]:
    """Each call's ms: calls of `per_call` x `slots` replies (`bench_dspark.py --closed-loop 4`;
    1: batch form), one policy (`make()`) across them."""
    policy, size = make(), per_call * slots
    return [replay(replies[at:at + size], slots, k, policy, costs, at) for at in range(0, len(replies), size)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replies", type=Path, required=True, help="record_replies.py's JSON")
    parser.add_argument("--profiles", type=Path, required=True, help="folder with sps.json (the decode profile)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1])
    parser.add_argument("--lookup", type=int, nargs="+", default=[2], help="prompt_lookup_min values to replay")
    parser.add_argument("--check-every", type=int, nargs="+", default=[lookup_assist.CHECK_EVERY])
    parser.add_argument("--search-budget", type=float, nargs="+", default=[lookup_assist.SEARCH_BUDGET],
                        help="LookupAssist's search_budget values (requests searched a step; inf: every request)")
    parser.add_argument("--k", type=int, default=7)
    parser.add_argument("--priced", nargs="+", default=[_spec(H200_ROUND_COSTS)], metavar="IN:START:AFTER",
                        help="`RoundCosts` that `LookupAssist.pays` believes (1-request steps at 1 request: a round "
                        "in a run, what one after a plain step costs more, the plain step after a run's saving; "
                        "the growth per doubling of the batch as the H200's); 1.15:0:0.35 is session 29's pricing")
    parser.add_argument("--charged", default=_spec(H200_ROUND_COSTS), metavar="IN:START:AFTER",
                        help="`RoundCosts` the replay charges (as --priced)")
    parser.add_argument("--plain", type=float, default=1.01, help="ms of a plain step at 1 request")
    parser.add_argument("--search-ms", type=float, default=0.0,
                        help="host ms charged per request a lookup policy searched (0: host work free)")
    parser.add_argument("--no-tail", action="store_true",
                        help="also replay each lookup row without `LookupAssist`'s tail weights (tail=False)")
    parser.add_argument("--batch-form", action="store_true",
                        help="calls of C replies (bench_dspark.py without --closed-loop): each ends in a tail")
    args = parser.parse_args()
    if min(args.k, *args.lookup, *args.check_every, *args.concurrency) < 1:
        parser.error("--k, --lookup, --check-every and --concurrency: must be >= 1")
    if not all(budget > 0 for budget in args.search_budget):
        parser.error(f"--search-budget: must be > 0, got {args.search_budget}")
    if not args.search_ms >= 0:
        parser.error(f"--search-ms: must be >= 0, got {args.search_ms}")
    try:
        priced, charged = [_costs(item) for item in args.priced], _costs(args.charged)
    except ValueError as exc:
        parser.error(f"--priced / --charged: {exc}")
    replies = [r for r in json.loads(args.replies.read_text())["replies"] if len(r["reply"]) > 1]
    decode = SPSProfile.load(args.profiles / "sps.json")
    per_call = 1 if args.batch_form else 4
    print(f"{len(replies)} replies, {sum(len(r['reply']) for r in replies)} tokens; {per_call} x C a call; plain step "
          f"{args.plain} ms at 1 request; rounds charged {args.charged}; {args.search_ms} ms a request searched")
    print("| requests | policy | mean paired ratio | total ratio | rounds | accepted drafts / round |\n"
          "|---:|---|---:|---:|---:|---:|")
    for slots in args.concurrency:
        base = run(replies, slots, args.k, Plain, Costs(decode, args.plain, charged), per_call)

        def row(name: str, make) -> None:
            c = Costs(decode, args.plain, charged, args.search_ms)
            times = run(replies, slots, args.k, make, c, per_call)
            ratios = [b / t for b, t in zip(base, times)]
            per = c.accepted / c.rounds if c.rounds else 0.0
            print(f"| {slots} | {name} | {statistics.fmean(ratios):.3f} | {sum(base) / sum(times):.3f} | "
                  f"{c.rounds} | {per:.2f} |", flush=True)

        row(f"ngram-{args.k}", Ngram)
        for text, costs in zip(args.priced, priced):
            for min_n in args.lookup:
                for every, budget in itertools.product(args.check_every, args.search_budget):
                    for tail in (True, False) if args.no_tail else (True,):
                        row(f"lookup {min_n} (every {every}, budget {budget:g}, priced {text}"
                            f"{'' if tail else ', no tail'})",
                            lambda: Lookup(args.k, min_n, decode, every, costs, tail, budget))


def _spec(costs: RoundCosts) -> str:
    return f"{costs.in_run:g}:{costs.start:g}:{costs.after:g}"


def _costs(text: str) -> RoundCosts:
    """`RoundCosts` from IN:START:AFTER (the H200's growth with the batch)."""
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(f"expected IN:START:AFTER, got {text!r}")
    in_run, start, after = (float(x) for x in parts)
    return RoundCosts(in_run=in_run, start=start, after=after)


if __name__ == "__main__":
    main()
