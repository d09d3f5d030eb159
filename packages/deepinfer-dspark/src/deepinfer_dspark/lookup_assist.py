# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""LookupAssist: prompt-lookup drafts where confidence-scheduled DSpark drafts nothing.

On the H200 (session 28, BENCHMARKS.md) three greedy replies of 16 at 1 request fell into a loop
past token 64 (the text repeating itself): fixed-7 accepted 0.86-1.00 of its drafts there, and
that was its 1.10x. Confidence scheduling never drafted there: its body rounds had settled below
plain decoding on the replies' first 64 tokens, the pause that followed declined the target
features, and a request with a gap in its drafter context is never drafted for again. Prompt
lookup (Saxena 2023) needs neither features nor a drafter, only the request's own tokens.

This wrapper reads each running request's live tokens (`deepinfer_core.Proposer.track`) every
`_every` tokens (`check_every`, or more at more requests: `search_budget`), also through dormant and
quiet stretches (declared at most that many rounds long where a lookup round could pay, so the
engine asks again; DSpark is asked once for its own stretch and hears of its steps in one report:
`HeldStretch`; a request whose suffix never occurred is skipped by `TokenBytes.repeats`), and while
the last `min_n` tokens occurred earlier (`ngram.latest_in_bytes` over the request's `TokenBytes`,
within the last `WINDOW` tokens) and such a round can pay (`pays`), it ends DSpark's pause for one
round: each request DSpark does not draft for gets the tokens that followed the earlier occurrence,
continued with its period (`ngram.continue_period`). A match is priced by its length (the suffix and
the earlier text agree on `n` tokens or more, extended backwards): text caught in a loop matches
over whole periods and its drafts are accepted, a short match in fresh text mostly is not, so each
length class learns its own accepted share, drifting back up to the prior while it is not drafted
(`MatchClasses`). The drafts are verified like any other, deterministic (one-hot q), so lossless at
any temperature; DSpark's own statistics never see them (its `commit` counts only the requests it
drafted). A round is priced by `RoundCosts` (the H200's step logs); in a batch's tail (the engine is
`draining` and no request waits) drafts of a request already ahead of the others weigh less
(`_tail`). Everything else is DSpark's: attributes are read from, and written to, the wrapped
proposer unless the wrapper has them. Device-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import islice
from types import SimpleNamespace

from deepinfer_core.interfaces import Draft, DraftRequest

from deepinfer_dspark.batch_tail import TAIL_AHEAD, TAIL_SLACK, tail_weights  # noqa: F401 (re-exported)
from deepinfer_dspark.batch_tail import known_tokens as _known
from deepinfer_dspark.forwarded import Forwarded
from deepinfer_dspark.held_stretch import HeldStretch
from deepinfer_dspark.lookup_pricing import LookupPricing
from deepinfer_dspark.match_classes import PRIOR_RATES, MatchClasses  # noqa: F401 (re-exported)
from deepinfer_dspark.round_costs import H200_ROUND_COSTS, RoundCosts
from deepinfer_dspark.token_bytes import WINDOW, TokenBytes

CHECK_EVERY = 1        # tokens a request grows between two searches at least (`lookup_replay.py` over 256 real
# replies, host work free: every 8 tokens missed a third of the rounds that pay, 1.25 against 1.39; every 2, 1.473 ->
# 1.437 at 1 request, the same at 2; session 34)
SEARCH_BUDGET = 1.0    # requests searched a step on average: at `batch` requests each is searched about every
# max(`check_every`, ceil(batch / 1)) tokens (`_every`). A search costs the GPU's host an estimated 0.035-0.1 ms
# (session 54, H100: the steps at 3-4 running ran 0.22-0.35 ms over DSpark alone's, searches and pricing); with that
# charged (`lookup_replay.py --search-ms`, 256 real replies, closed loop) every request every step lost most of
# lookup's gain at 2-4 requests (0.1 ms: 1.086 / 0.905 at 2 / 4 against 1.158 / 1.059 with this budget); free, this
# budget gives up 0-3 points there and nothing at 1 request
UNASKED_TOKENS = 32    # tokens a matched request the engine did not ask about (its sampling cannot be
# drafted for: penalties, structured output, min_tokens) grows before it is searched again: its
# match made every step a due round that asked nothing (session 29's review helper)


class LookupAssist(LookupPricing):
    """A `DSparkProposer` (confidence scheduling) with prompt lookup where it drafts nothing.

    Args:
        inner: the proposer wrapped.
        min_n: tokens of the context's suffix that must have occurred before (1 .. `WINDOW` - 1).
        check_every: tokens between two searches of a request (>= 1), at least (`_every`).
        search_budget: requests searched a step on average (> 0): each request about every
            ceil(requests / search_budget) tokens where that is more than `check_every` (its
            count runs from its own last search, the engine's asks every `_every` steps: after a
            lookup round up to twice that).
        costs: what a round costs beyond a plain step (`RoundCosts`; the H200's by default).
        tail: weigh drafts in a batch's tail (`_tail`), which the engine's `draining` call
            marks (`LLM.generate`); False counts every request's fully.
        tail_rounds: also judge DSpark's rounds with those weights (`DSparkProposer.round_weights`,
            `batch_tail.tail_expected`); False (the default) judges them by every request's drafts.
        prefer_loops: a request caught in a loop gets lookup drafts also where DSpark drafts
            (`LookupPricing.loops`; DSpark then drafts for the others, or hears an idle round).

    Raises:
        ValueError: `min_n`, `check_every` or `search_budget` out of range (named).
    """

    def __init__(self, inner, min_n: int, check_every: int = CHECK_EVERY, costs: RoundCosts = H200_ROUND_COSTS,
                 tail: bool = True, tail_rounds: bool = False, prefer_loops: bool = False,
                 search_budget: float = SEARCH_BUDGET) -> None:
        if not 1 <= min_n < WINDOW:
            raise ValueError(f"speculative_config.prompt_lookup_min: must be in [1, {WINDOW - 1}] "
                             f"(the tokens searched), got {min_n}")
        if check_every < 1:
            raise ValueError(f"check_every: must be >= 1, got {check_every}")
        if not (search_budget > 0 and math.isfinite(1.0 / search_budget)):
            raise ValueError(f"search_budget: must be > 0 (and its inverse finite), got {search_budget}")
        self.__dict__.update(   # the wrapper's own attributes (later writes to them stay here)
            inner=inner, min_n=min_n, check_every=check_every, costs=costs, tail=tail, tail_rounds=tail_rounds,
            prefer_loops=prefer_loops, search_budget=search_budget,
            _views={},      # request -> its live tokens (`track`)
            _ctx={},        # request -> its known tokens as bytes (`TokenBytes`)
            _prompt={},     # request -> tokens when tracked: the search starts past them
            _checked={},    # request -> known tokens at its last search
            _matched={},    # request -> (drafts, match class) its last search found
            _recheck=set(),  # searched at the next chance (they just drafted)
            _open={},       # lookup-drafted request -> (tokens before, drafts, class)
            classes=MatchClasses(min_n),
            _now=SimpleNamespace(override=False,  # DSpark was paused, this round drafts by lookup
                                 running=0,       # requests running, as the engine last said
                                 told=0,          # ... in `running` (for this round only: `loops`)
                                 in_run=False,    # the last step carried drafts (a round)
                                 draining=False),  # the engine only drains what it holds
            _could={},      # batch -> `_could_pay`
            _held=HeldStretch(self._held_passed, self._held_quiet),   # DSpark's stretch, sliced for the engine
            lookup_rounds=0, lookup_drafts=0, lookup_accepted=0)

    # DSpark's, read every step (core, the step logger): forwarded without `__getattr__`'s miss
    wants_features = Forwarded()
    observe_step, observe_many, observe = Forwarded(quiet=True), Forwarded(quiet=True), Forwarded(quiet=True)
    target_layer_ids, drafted_rounds, pending, runner = Forwarded(), Forwarded(), Forwarded(), Forwarded()

    def __getattr__(self, name: str):
        if name in ("inner", "_held") or name.startswith("__") or name in _FORWARDED:
            raise AttributeError(name)   # (copy, pickle: no recursion; `Forwarded` already missed)
        self._held.flush()
        return getattr(self.inner, name)   # (only for names not defined here)

    def __setattr__(self, name: str, value) -> None:
        if name in self.__dict__ or hasattr(type(self), name) or "inner" not in self.__dict__ \
                or not hasattr(self.inner, name):
            object.__setattr__(self, name, value)   # the wrapper's own (or new) attribute
        else:
            setattr(self.inner, name, value)         # DSpark's (a patched method, a setting)

    # --- the engine's calls -------------------------------------------------------------
    def track(self, request_id: str, token_ids: Sequence[int]) -> None:
        self._views[request_id] = token_ids
        self._ctx[request_id] = TokenBytes()
        self._prompt[request_id] = self._checked[request_id] = len(token_ids)
        inner = getattr(self.inner, "track", None)   # (DSpark's `Stragglers`, with `judge_stragglers`)
        if inner is not None:
            inner(request_id, token_ids)

    def remove(self, request_id: str) -> None:
        opened, view = self._open.get(request_id), self._views.get(request_id)
        if opened is not None and view is not None:   # its last round: the engine commits none after it
            self._credit(opened, _known(view))
        for table in (self._views, self._ctx, self._prompt, self._checked, self._matched, self._open):
            table.pop(request_id, None)
        self._recheck.discard(request_id)
        self._held.flush()
        self.inner.remove(request_id)

    def commit(self, request_id: str, num_tokens: int) -> None:
        self._held.flush()
        self.inner.commit(request_id, num_tokens)
        opened = self._open.pop(request_id, None)
        if opened is not None and self._credit(opened, num_tokens):
            self._recheck.add(request_id)

    def _credit(self, opened: tuple[int, int, int], num_tokens: int) -> bool:
        """Counts a lookup round's accepted drafts once the request holds `num_tokens` tokens
        (False when that is not this round's verification)."""
        before, drafts, cls = opened
        if not before < num_tokens <= before + drafts + 1:
            return False
        accepted = num_tokens - before - 1
        self.lookup_accepted += accepted
        self.classes.add(cls, drafts, accepted)
        return True

    def draining(self, flag: bool) -> None:
        """The engine only drains the requests it holds (True, `LLM.generate`) or may be given
        more (False): `_tail` weighs drafts only while draining."""
        self._now.draining = bool(flag)
        inner = getattr(self.inner, "draining", None)   # (DSpark's rounds: judged by the batch's straggler)
        if inner is not None:
            inner(flag)

    def idle_rounds(self) -> int:
        self._held.flush()
        rounds = self.inner.idle_rounds()
        self._now.override = rounds > 0 and self._due(self._now.running or self.inner.batch)
        return 0 if self._now.override else rounds

    def running(self, num_requests: int) -> None:
        self._now.running = self._now.told = num_requests
        self._held.flush()
        self.inner.running(num_requests)

    def idle_round(self, num_requests: int) -> None:
        if self._now.override:   # a lookup round was due, but the engine had no request to ask
            self._now.override = False
            self._postpone(list(self._matched), num_requests)
        self._now.running, self._now.in_run = num_requests, False
        self.classes.age(1)
        self._held.flush()
        self.inner.idle_round(num_requests)

    def dormant_rounds(self, num_requests: int) -> int:
        self._now.running = num_requests
        held = self._held
        if held.quiet and held.rounds(num_requests, quiet=True) is not None:
            return 0   # inside DSpark's quiet stretch: the engine would not ask it (`quiet_rounds` answers)
        rounds = held.rounds(num_requests)   # (what is left of DSpark's last declaration)
        if rounds is None:
            held.flush()
            rounds = self.inner.dormant_rounds(num_requests)
            held.declared(num_requests, rounds)
        return self._stretch(rounds, num_requests)

    def dormant_floor(self, num_requests: int) -> int:
        """DSpark's floor for the stretch just declared (`PausePolicy.dormant_floor`), raised to
        the fewest requests from which no count up to `num_requests` could pay a lookup round
        (`_could_pay`: where one could, the engine must ask before every `_every` steps);
        `num_requests` where one could pay at it."""
        ask = getattr(self.inner, "dormant_floor", None)   # (`NoDrafter`: none, no floor)
        floor = num_requests if ask is None else ask(num_requests)
        lowest = num_requests
        while lowest > floor and not self._could_pay(lowest - 1):
            lowest -= 1
        return num_requests if self._could_pay(num_requests) else lowest

    def quiet_rounds(self, num_requests: int) -> int:
        self._now.running = num_requests
        rounds = self._held.rounds(num_requests, quiet=True)
        if rounds is None:
            self._held.flush()
            rounds = self.inner.quiet_rounds(num_requests)
            self._held.declared(num_requests, rounds, quiet=True)
        return self._stretch(rounds, num_requests)

    def _held_passed(self, num_requests: int, rounds: int) -> None:
        """`HeldStretch`'s report: DSpark's `dormant_passed` (the wrapped proposer's at call time:
        a copy reports to its own)."""
        self.inner.dormant_passed(num_requests, rounds)

    def _held_quiet(self, num_requests: int, rounds: int) -> None:
        """`HeldStretch`'s report of a quiet stretch: DSpark's `quiet_passed`."""
        self.inner.quiet_passed(num_requests, rounds)

    def dormant_passed(self, num_requests: int, rounds: int) -> None:
        self._now.running, self._now.in_run = num_requests, False
        self.classes.age(rounds)
        if not self._held.ran(num_requests, rounds):
            self._held.flush()
            self.inner.dormant_passed(num_requests, rounds)

    def quiet_passed(self, num_requests: int, rounds: int) -> None:
        self._now.running, self._now.in_run = num_requests, False
        self.classes.age(rounds)
        if not self._held.ran(num_requests, rounds, quiet=True):
            self._held.flush()
            self.inner.quiet_passed(num_requests, rounds)

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        self.classes.age(1)
        for r in requests:   # the engine commits before it proposes: an entry left was never verified
            self._open.pop(r.request_id, None)
        running = max(self._now.running, len(requests))
        self._held.flush()
        if self._now.override:   # DSpark is paused: its round is an idle one, at the requests running
            self._now.override = False
            self.inner.idle_round(running)
            drafts = [Draft([]) for _ in requests]
        else:
            loops = self.loops(requests, running) if self.prefer_loops else _NONE   # (off: no call a round)
            asked = [r for r in requests if r.request_id not in loops] if loops else requests
            if self.tail_rounds:   # DSpark's round judged as the batch's tail counts it
                self.inner.round_weights = self._tail(running)
            told = max(len(requests), self._now.told)   # (as the engine would count DSpark's round)
            if not asked:   # every request loops: DSpark's round is an idle one
                self.inner.idle_round(told)
                drafts = [Draft([]) for _ in requests]
            elif loops:     # DSpark drafts for the others, its round priced at the requests running
                self.inner.running(told)
                proposed = self.inner.propose(asked)
                if len(proposed) != len(asked):
                    raise ValueError(f"speculative_config.proposer: DSpark returned {len(proposed)} drafts for "
                                     f"{len(asked)} requests")
                by_id = dict(zip((r.request_id for r in asked), proposed))
                drafts = [by_id.get(r.request_id, Draft([])) for r in requests]
            else:
                drafts = self.inner.propose(requests)
            empty = [r.request_id for r, d in zip(requests, drafts) if not d.token_ids and r.request_id not in loops]
            if empty and self._could_pay(running):
                self._search(running, empty)   # the requests DSpark left empty (a gap in their context)
        found = {}
        for i, r in enumerate(requests if self._matched else ()):   # (none matched: DSpark's round as it is)
            if drafts[i].token_ids or r.request_id not in self._matched or r.max_tokens < 1:
                continue
            ctx = self._ctx.get(r.request_id)
            if ctx is None:
                continue
            ctx.sync(r.token_ids, _known(r.token_ids))
            tokens, length = ctx.match(self.min_n, r.max_tokens)
            if tokens:
                found[i] = (tokens, self.classes.of(length))
        alone = found and not any(d.token_ids for d in drafts)
        if alone and (getattr(self.inner, "retiming", False) or not self.pays(   # (re-timing: steps stay plain)
                running, self._priced_drafts(running, {requests[i].request_id: (len(tokens), cls)
                                                       for i, (tokens, cls) in found.items()}),
                self._now.in_run)):
            found = {}   # a round of lookup drafts alone must pay for itself (with DSpark's it rides along)
        for i, (tokens, cls) in found.items():
            r = requests[i]
            drafts[i] = Draft(tokens)
            self._open[r.request_id] = (len(r.token_ids), len(tokens), cls)
            self.lookup_drafts += len(tokens)
        if found:
            self.lookup_rounds += 1
        now = self._now
        now.in_run = any(d.token_ids for d in drafts)   # (DSpark's or lookup's: a round)
        now.running = now.told = 0   # heard for this round only: later rounds asked about all count
        if self._matched:
            looked, asked = {requests[i].request_id for i in found}, {r.request_id for r in requests}
            self._postpone([m for m in self._matched if m not in asked], running)
            for request_id in [m for m in self._matched if m not in looked]:   # no longer matching (or
                del self._matched[request_id]   # DSpark's): searched again once grown, not every round
        return drafts

    def _postpone(self, request_ids: list[str], batch: int) -> None:
        """Matched requests the engine did not ask about: searched again once grown `UNASKED_TOKENS`
        (at `batch` requests running)."""
        every = self._every(batch)
        for request_id in request_ids:
            self._matched.pop(request_id, None)
            view = self._views.get(request_id)
            if view is not None:
                self._checked[request_id] = _known(view) + UNASKED_TOKENS - every

    # --- decisions ----------------------------------------------------------------------
    def _stretch(self, rounds: int, num_requests: int) -> int:
        """A stretch DSpark declares, capped so the engine asks again within `_every` rounds
        where a lookup round could pay, or none when one is due now."""
        if rounds <= 0 or not self._could_pay(num_requests):
            return rounds
        if self._due(num_requests):
            return 0
        return min(rounds, self._every(num_requests))

    def _due(self, batch: int) -> bool:
        """Whether a lookup round pays at `batch` requests: some running request's suffix
        occurred before (searched when it grew `_every(batch)` tokens, or just drafted) and
        `pays` says yes. Nothing is searched where even a full lookup could not pay."""
        if not self._could_pay(batch) or getattr(self.inner, "retiming", False):   # (a plain re-timing run:
            return False                                                           # its steps stay plain)
        self._search(batch)
        if not self._matched:
            return False
        return self.pays(batch, self._priced_drafts(batch, self._matched),
                         self._now.in_run)

    def _search(self, batch: int, request_ids: list[str] | None = None) -> None:
        """Searches `request_ids`, or else the oldest `batch` requests tracked (first come,
        first served: the running ones; a preempted one may take a place and a running one then
        goes unsearched a while; a long queue of waiting requests costs nothing), those that
        decode and grew `_every(batch)` tokens since their last search or just drafted."""
        if request_ids is None:
            chosen = islice(self._views.items(), batch)
        else:
            chosen = ((rid, self._views[rid]) for rid in request_ids if rid in self._views)
        prompt, checked, every, recheck, n = self._prompt, self._checked, self._every(batch), self._recheck, self.min_n
        for request_id, view in chosen:   # (names hoisted: run for each running request every step)
            known = len(view)
            while known and view[known - 1] < 0:   # (`known_tokens`, inline)
                known -= 1
            if known <= prompt[request_id]:   # not decoding yet
                continue
            if known - checked[request_id] < every and request_id not in recheck:
                continue
            checked[request_id] = known
            ctx = self._ctx[request_id]
            if not ctx.repeats(view, known, n):   # (no earlier occurrence: nothing to match)
                self._matched.pop(request_id, None)
                continue
            found, length = ctx.match_view(view, known, n, self.inner.num_tokens)   # (the n-grams just indexed)
            if found:
                self._matched[request_id] = (len(found), self.classes.of(length))
            else:
                self._matched.pop(request_id, None)
        self._recheck.clear()

_NONE: frozenset = frozenset()
_FORWARDED = frozenset(name for name, value in vars(LookupAssist).items() if isinstance(value, Forwarded))
