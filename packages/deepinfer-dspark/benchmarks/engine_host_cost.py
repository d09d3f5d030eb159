# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Where a real engine's host time per step goes in the speculative proposer's calls.

`lookup_host_cost.py` and `proposer_host_cost.py` drive the proposer alone in a tight loop; this
script runs the engine itself (`LLM.chat`, greedy, batch form as `bench_dspark.py` runs it) and
times every call the engine makes to its proposer (`dormant_rounds`, `propose`, `observe_step`,
...), the prompt-lookup wrapper's own phases inside them (`_due`, `_search`, `pays`) and the
calls that reach DSpark (`inner.*`) and DSpark's phases inside its `propose` (`dspark.*`:
`_plan_pause`, `schedule_round`, the drafter's `draft`, ...), each summed over the measured calls and divided by the
engine's steps; and the step's host time outside the model's forward (`execute_model`). Between
two calls the model's forward runs, so these functions run with cold caches, as on the H200's
host: in session 44 a wrapper ask cost ~48 us here against ~20 us in `lookup_host_cost.py`'s loop,
and on a slow H200 host the default's plain steps ran +0.06-0.11 ms (6-10%) over plain decoding's
at 1-2 requests (BENCHMARKS.md, fortieth session). This machine's numbers only: ratios between
modes, not the H200's microseconds.

Usage (repository root; profiles as `bench_dspark.py --save-sps DIR/sps_batch.json` writes them):
    python3 packages/deepinfer-dspark/benchmarks/engine_host_cost.py \
        --target ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf --drafter DRAFTER \
        --profiles benchmarks/results/h200-2026-12-04f/run6-prior8-x2/b --concurrency 1 --sets 4
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

ENGINE_CALLS = ("dormant_rounds", "dormant_floor", "quiet_rounds", "dormant_passed", "quiet_passed", "idle_rounds",
                "idle_round", "wants_features", "propose", "observe_step", "commit", "running", "remove", "track",
                "draining")
WRAPPER_PHASES = ("_due", "_search", "_priced_drafts", "pays")   # `LookupAssist`'s, inside the calls above
INNER_CALLS = ("dormant_rounds", "dormant_floor", "dormant_passed", "quiet_rounds", "quiet_passed", "idle_rounds",
               "idle_round", "propose", "commit")
DSPARK_PHASES = ("_plan_pause", "expected_loss", "cannot_pay", "_overlapped",   # DSpark's own, inside its `propose`
                 "_lean_round")
# (`_overlapped`: with `overlap_bookkeeping`, the host work a CUDA round does during the drafter's forward;
# `_lean_round`: a leased round's whole call, its draft included, `DraftingLease`)
MODULE_PHASES = ("schedule_round", "host_rows", "tail_expected")   # `deepinfer_dspark.proposers`' imports


class Clock:
    """Seconds and calls summed per name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.patched: list[tuple] = []   # (module, name, function) wrapped by `instrument`

    def timed(self, fn, name: str):
        def call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - start
                self.calls[name] += 1
        return call

    def clear(self) -> None:
        self.seconds.clear()
        self.calls.clear()

    def restore(self) -> None:
        """Puts back the module functions `instrument` wrapped."""
        while self.patched:
            module, name, fn = self.patched.pop()
            setattr(module, name, fn)


def instrument(llm, clock: Clock) -> None:
    """Times `llm`'s engine steps, its model forwards and its proposer's calls on `clock`."""
    engine = llm.engine
    engine.step = clock.timed(engine.step, "step")
    engine.runner.execute_model = clock.timed(engine.runner.execute_model, "execute_model")
    decoder = getattr(engine, "speculative", None)
    if decoder is None:
        return
    proposer = decoder.proposer
    for name in ENGINE_CALLS:
        fn = getattr(proposer, name, None)
        if fn is not None:
            object.__setattr__(proposer, name, clock.timed(fn, name))   # (past a wrapper's forwarding)
    inner = proposer.__dict__.get("inner")   # the prompt-lookup wrapper's DSpark, when wrapped
    if inner is not None:
        for name in WRAPPER_PHASES:
            object.__setattr__(proposer, name, clock.timed(getattr(proposer, name), name))
        for name in INNER_CALLS:
            setattr(inner, name, clock.timed(getattr(inner, name), f"inner.{name}"))
    dspark = proposer if inner is None else inner
    if hasattr(dspark, "_plan_pause"):
        import deepinfer_dspark.proposers as module
        for name in DSPARK_PHASES:
            object.__setattr__(dspark, name, clock.timed(getattr(dspark, name), f"dspark.{name}"))
        for name in MODULE_PHASES:   # (restored by `restore`: other engines in the process share the module)
            clock.patched.append((module, name, getattr(module, name)))
            setattr(module, name, clock.timed(getattr(module, name), f"dspark.{name}"))
        runner = dspark.runner
        runner.draft = clock.timed(runner.draft, "dspark.runner.draft")
    decoder.dormant.__init__(proposer)   # (core's `DormantSteps` holds the methods it found at start)


def measure(llm, batches: list[list], params, generate=None) -> tuple[dict, list]:
    """Runs `batches` (greedy `params`) after one warm-up reply (the first batch's first
    prompt) through `generate(batch, params)` (default `llm.chat`). Returns the steps, the host
    microseconds a step outside the forward and in it (`execute_model`: on CUDA its launch, and with
    the asynchronous engine the wait for the step before), per name (calls, us a step), and the outputs.

    Raises:
        RuntimeError: no step was timed."""
    generate = llm.chat if generate is None else generate
    clock = Clock()
    instrument(llm, clock)
    generate(batches[0][:1], params)   # warm-up, excluded
    clock.clear()
    try:
        outputs = [generate(batch, params) for batch in batches]
    finally:
        clock.restore()
    steps = clock.calls["step"]
    if steps == 0:
        raise RuntimeError("no engine step was timed")
    outside = 1e6 * (clock.seconds["step"] - clock.seconds["execute_model"]) / steps
    calls = {name: (clock.calls[name], 1e6 * clock.seconds[name] / steps)
             for name in clock.seconds if name not in ("step", "execute_model")}
    forward = 1e6 * clock.seconds["execute_model"] / steps
    return {"steps": steps, "outside_us": outside, "forward_us": forward, "calls": calls}, outputs


def report(mode: str, concurrency: int, result: dict) -> str:
    lines = [f"{mode} at {concurrency}: {result['steps']} steps, host outside the forward "
             f"{result['outside_us']:.1f} us a step, in it {result['forward_us']:.1f}",
             "| call | calls | us a step |", "|---|---:|---:|"]
    for name, (calls, us) in sorted(result["calls"].items(), key=lambda item: -item[1][1]):
        lines.append(f"| {name} | {calls} | {us:.1f} |")
    return "\n".join(lines)


def mode_config(mode: str, drafter: str, spec, decode, untimed: bool = False) -> dict | None:
    """The `speculative_config` of a `--modes` name: None for plain decoding (`none`, and `none-again`:
    plain decoding built and timed once more, later in the process, to tell a cost of the default
    from the order the engines ran in). `spec` / `decode`: the k = 7 and plain decoding profiles."""
    if mode in ("none", "none-again"):
        return None
    if mode == "fixed-7":   # every round verifies 7 drafts: no scheduling, no ledgers, no wrapper
        return {"method": "dspark", "model": drafter, "num_speculative_tokens": 7}
    config = {"method": "dspark", "model": drafter, "num_speculative_tokens": 7, "scheduling": "confidence",
              "sps_profile": spec, "decode_profile": decode}
    if untimed:
        config["measure_round_times"] = False
    if mode == "confidence-overlap":
        config["overlap_bookkeeping"] = True   # (`LateBookkeeping`: the hook's time is hidden on CUDA)
    if mode == "confidence-unleased":
        config["lease_rounds"] = 0   # every round judged (`DraftingLease` off)
    if mode == "confidence-alone":
        config["prompt_lookup_min"] = 0   # DSpark without the prompt-lookup wrapper
    return config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--drafter", required=True)
    parser.add_argument("--profiles", type=Path, required=True, help="folder with sps_batch.json, spec_sps_batch.json")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--sets", type=int, default=4, help="measured batches")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--modes", nargs="+", default=["none", "confidence", "confidence-alone"],
                        choices=["none", "none-again", "confidence", "confidence-alone", "confidence-overlap",
                                 "confidence-unleased", "fixed-7"])
    parser.add_argument("--untimed", action="store_true",
                        help="confidence modes price rounds on the profiles alone (`measure_round_times` false): "
                             "with the H200's profiles they then draft here as there, where this CPU's measured "
                             "rounds (the drafter's forward on the host) would rule drafting out")
    args = parser.parse_args()
    if args.concurrency < 1 or args.sets < 1:
        parser.error("--concurrency and --sets: must be >= 1")
    from deepinfer_core import LLM, SamplingParams

    from deepinfer_dspark.sps import SPSProfile
    from deepinfer_dspark.train.data import build_prompts, stdlib_docstrings

    decode = SPSProfile.load(args.profiles / "sps_batch.json")
    spec = SPSProfile.load(args.profiles / "spec_sps_batch.json")
    prompts = [[{"role": "user", "content": p}]
               for p in build_prompts(stdlib_docstrings(args.concurrency * args.sets, seed=12345))]
    batches = [prompts[i * args.concurrency:(i + 1) * args.concurrency] for i in range(args.sets)]
    for mode in args.modes:
        config = mode_config(mode, args.drafter, spec, decode, args.untimed)
        llm = LLM(args.target, speculative_config=config, dtype=args.dtype, max_num_seqs=args.concurrency,
                  max_model_len=1024)
        result, _ = measure(llm, batches, SamplingParams(temperature=0, max_tokens=args.max_tokens))
        print(report(mode, args.concurrency, result), flush=True)


if __name__ == "__main__":
    main()
