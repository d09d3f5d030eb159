# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Per-token cost of structured output against unconstrained decoding, in the same process.

For each batch size B, B chat prompts generate exactly `--tokens` tokens each, greedy, twice
per mode (unconstrained with `ignore_eos`, then under a JSON schema whose shortest document is
longer than `--tokens`, so both modes stop on length with the same token count); the fastest
of `--repeats` runs of each mode is kept. Reported: milliseconds per output token (wall time of
`LLM.chat` / (B * tokens), prefill included and equal in both modes), the slowdown, and per
masked step: mask filling (llguidance, in the mask thread, overlapping the forward pass), the
engine thread's wait for the masks, and token acceptance.

    python benchmarks/structured_overhead.py --batch 1 64 --tokens 32
    python benchmarks/structured_overhead.py --device cuda --random-weights TOKENIZER_DIR

`--random-weights DIR` builds a SmolLM2-135M-shaped Llama with random weights and the tokenizer
in DIR (for machines without the GGUF); masks still follow the real 49,152-token vocabulary.
`--shape llama3-8b` (with `--random-weights`) uses a Llama-3-8B-shaped model instead, with the
same tokenizer and vocabulary, its seeded random weights made on the device (`load_format
dummy`): a model whose decode step is long enough to be GPU-bound.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

SCHEMA = {  # at least 40 items of >= 7 tokens: longer than any --tokens used here
    "type": "object",
    "properties": {"items": {"type": "array", "minItems": 40, "items": {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 16}, "qty": {"type": "integer", "minimum": 1,
                                                                             "maximum": 99}},
        "required": ["name", "qty"], "additionalProperties": False}}},
    "required": ["items"], "additionalProperties": False,
}
TOPICS = ["groceries", "a camping trip", "a birthday party", "a workshop", "a kitchen", "a garden", "an office",
          "a school"]
SMOLLM2_135M = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                    num_key_value_heads=3, vocab_size=49152, max_position_embeddings=8192, rms_norm_eps=1e-5,
                    rope_theta=100000.0, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)


LLAMA3_8B_SHAPE = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=4096,
                       intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                       num_key_value_heads=8, vocab_size=49152, max_position_embeddings=8192,
                       rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False,
                       bos_token_id=1, eos_token_id=2, torch_dtype="bfloat16")


def config_only_checkpoint(tokenizer_dir: Path, config: dict) -> Path:
    """A folder with `config` and the tokenizer files of `tokenizer_dir`, no weights (for
    `load_format="dummy"`)."""
    folder = Path(tempfile.mkdtemp(prefix="shape-"))
    (folder / "config.json").write_text(json.dumps(config))
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (tokenizer_dir / name).is_file():
            shutil.copy(tokenizer_dir / name, folder / name)
    return folder


def random_checkpoint(tokenizer_dir: Path) -> Path:
    """A SmolLM2-135M-shaped Llama with random weights (bfloat16) and the given tokenizer files."""
    import torch
    import transformers

    folder = Path(tempfile.mkdtemp(prefix="smollm2-random-"))
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**SMOLLM2_135M)).to(torch.bfloat16)
    model.save_pretrained(str(folder))
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (tokenizer_dir / name).is_file():
            shutil.copy(tokenizer_dir / name, folder / name)
    return folder


def _trace_steps(manager, timeline: list[dict[str, float]]) -> None:
    """Records, per mask-thread job, when each phase starts and ends (perf_counter seconds):
    submit, consume (llguidance, after the ids reached the host), fill (llguidance), end, and
    when the engine thread asked for the masks and got them."""
    backend = manager.backend
    originals = {"consume": backend.consume, "fill_bitmask": backend.fill_bitmask,
                 "_run_job": manager._run_job, "start_fill": manager.start_fill}
    current = {}

    def phase(name, fn):
        def wrapper(*a):
            record = current.get(threading.get_ident())
            start = time.perf_counter()
            result = fn(*a)
            if record is not None:
                record.setdefault(name + "_start", start)
                record[name + "_end"] = time.perf_counter()
            return result
        return wrapper

    def run_job(job, *a):
        record = job.__dict__.setdefault("trace", {})   # the job may start before start_fill returns
        record["job_start"] = time.perf_counter()
        current[threading.get_ident()] = record
        try:
            return originals["_run_job"](job, *a)
        finally:
            record["job_end"] = time.perf_counter()
            current.pop(threading.get_ident(), None)

    def start_fill(*a):
        submit = time.perf_counter()
        job = originals["start_fill"](*a)
        if job is not None:
            job.__dict__.setdefault("trace", {})["submit"] = submit
            timeline.append(job.trace)
            result = job.result

            def traced_result():
                job.trace.setdefault("asked", time.perf_counter())
                value = result()
                job.trace.setdefault("got", time.perf_counter())
                return value
            job.result = traced_result
        return job

    backend.consume = phase("consume", originals["consume"])
    backend.fill_bitmask = phase("fill", originals["fill_bitmask"])
    manager._run_job = run_job
    manager.start_fill = start_fill


def timeline_summary(timeline: list[dict[str, float]]) -> dict[str, float]:
    """Median and 90th percentile (ms) of each phase of the traced jobs (see `_trace_steps`)."""
    spans = {"queue": ("submit", "job_start"), "ids": ("job_start", "consume_start"),
             "consume": ("consume_start", "consume_end"), "between": ("consume_end", "fill_start"),
             "fill": ("fill_start", "fill_end"), "after": ("fill_end", "job_end"),
             "job": ("submit", "job_end"), "slack": ("submit", "asked"), "wait": ("asked", "got")}
    out = {"jobs": len(timeline)}
    for name, (a, b) in spans.items():
        values = sorted(1e3 * (t[b] - t[a]) for t in timeline if a in t and b in t)
        if values:
            out[f"{name}_p50"] = values[len(values) // 2]
            out[f"{name}_p90"] = values[int(0.9 * (len(values) - 1))]
    return out


def timed_chat(llm, convs, params, timeline: list | None = None) -> tuple[float, dict[str, float]]:
    """Seconds of one chat call, and milliseconds per masked step spent consuming tokens and
    filling masks (in the mask thread), waiting for them (engine thread) and consuming tokens on
    the engine thread (the ones that end a request, and the synchronous loop's)."""
    manager = llm.engine.structured
    originals = {name: getattr(manager, name) for name in ("_run_job", "start_fill", "accept_step")}
    spent = {"fill": 0.0, "wait": 0.0, "accept": 0.0, "steps": 0}
    mask_thread = threading.local()

    def timing(name, fn):
        def wrapper(*a):
            start = time.perf_counter()
            result = fn(*a)
            spent[name] += time.perf_counter() - start
            return result
        return wrapper

    def run_job(*a):
        mask_thread.inside = True
        try:
            return timing("fill", originals["_run_job"])(*a)
        finally:
            mask_thread.inside = False

    def accept_step(*a):   # engine thread only (`accept_through` calls it); the mask thread's are "fill"
        if getattr(mask_thread, "inside", False):
            return originals["accept_step"](*a)
        return timing("accept", originals["accept_step"])(*a)

    def start_fill(*a):
        job = originals["start_fill"](*a)
        if job is not None:
            spent["steps"] += 1
            job.result = timing("wait", job.result)
            job.wait_consumed = timing("wait", job.wait_consumed)
        return job

    manager._run_job = run_job
    manager.start_fill = start_fill
    manager.accept_step = accept_step
    if timeline is not None:
        _trace_steps(manager, timeline)
    try:
        start = time.perf_counter()
        outs = llm.chat(convs, params)
        seconds = time.perf_counter() - start
    finally:
        for name in originals:
            delattr(manager, name)  # back to the class methods
        for name in ("consume", "fill_bitmask"):
            manager.backend.__dict__.pop(name, None)
    tokens = params.max_tokens
    for out in outs:
        if out.error is not None or out.outputs[0].finish_reason != "length" or len(out.outputs[0].token_ids) != tokens:
            raise SystemExit(f"run did not produce {tokens} tokens: {out.error or out.outputs[0].finish_reason}")
    steps = max(spent.pop("steps"), 1)
    return seconds, {k: 1e3 * v / steps for k, v in spent.items()}


def measure(llm, batch: int, args, free, constrained, threads: int, interval: float) -> None:
    """Prints one row: `batch` requests, unconstrained against JSON-constrained, best of repeats."""
    convs = [[{"role": "user", "content": f"List the things needed for {TOPICS[i % len(TOPICS)]} as JSON "
                                          f"(list {i})."}] for i in range(batch)]
    best = {"free": None, "json": None}
    for _ in range(args.repeats):
        for mode, params in (("free", free), ("json", constrained)):
            timeline = [] if args.timeline and mode == "json" else None
            result = timed_chat(llm, convs, params, timeline)
            if best[mode] is None or result[0] < best[mode][0]:
                best[mode] = (*result, timeline)
    tokens = batch * args.tokens
    (free_s, _, _), (json_s, per_step, timeline) = best["free"], best["json"]
    row = {"batch": batch, "mask_threads": threads, "switch_interval": interval, "settled": args.settle,
           "tokens_per_request": args.tokens, "free_ms_per_token": 1e3 * free_s / tokens,
           "json_ms_per_token": 1e3 * json_s / tokens, "slowdown_pct": 100 * (json_s / free_s - 1),
           **{f"{k}_ms_per_step": v for k, v in per_step.items()}}
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
    if args.profile is not None:
        for mode, params in (("free", free), ("json", constrained)):
            profile_chat(llm, convs, params, f"batch {batch}, {mode}, mask threads {threads}", args.profile)
    if timeline:
        summary = timeline_summary(timeline)
        print("  timeline (ms):", json.dumps({k: round(v, 3) for k, v in summary.items()}), flush=True)


def profile_chat(llm, convs, params, label: str, path: Path) -> None:
    """Appends to `path` the 30 costliest functions (own time, then cumulative) of one chat call,
    profiled in the calling thread (the engine's; the mask thread is not profiled)."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    llm.chat(convs, params)
    profiler.disable()
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(30)
    with open(path, "a") as f:
        f.write(f"==== {label}\n{text.getvalue()}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="checkpoint (default: SmolLM2-135M-Instruct GGUF)")
    parser.add_argument("--random-weights", type=Path, default=None, metavar="TOKENIZER_DIR")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--switch-interval", type=float, default=None,
                        help="seconds: the thread switch interval while grammars are live (0: leave the default)")
    parser.add_argument("--shape", choices=["smollm2-135m", "llama3-8b"], default="smollm2-135m",
                        help="with --random-weights: the model shape (llama3-8b: weights made on the device)")
    parser.add_argument("--timeline", action="store_true",
                        help="also print each phase of the mask thread's jobs (median, 90th percentile)")
    parser.add_argument("--mask-threads", type=int, nargs="+", default=[0],
                        help="llguidance threads for consuming and filling (0: its default); one row each")
    parser.add_argument("--profile", type=Path, default=None,
                        help="append a cProfile (engine thread) of one more free and one more JSON run per row")
    parser.add_argument("--settle", action="store_true",
                        help="wait until the grammar's extra templates are built before measuring")
    args = parser.parse_args()
    import torch

    from deepinfer_core import LLM, SamplingParams
    from deepinfer_core.structured import switch_interval as switch_module

    if args.switch_interval is not None:
        switch_module.FILL_SWITCH_INTERVAL_S = args.switch_interval or sys.getswitchinterval()

    extra = {}
    if args.shape == "llama3-8b":
        if not args.random_weights:
            raise SystemExit("--shape llama3-8b needs --random-weights TOKENIZER_DIR")
        model = str(config_only_checkpoint(args.random_weights, LLAMA3_8B_SHAPE))
        extra = dict(load_format="dummy", kv_cache_memory=8 << 30)
    else:
        model = str(random_checkpoint(args.random_weights)) if args.random_weights else args.model
    llm = LLM(model, device=args.device, dtype=args.dtype, max_model_len=512, max_num_seqs=max(args.batch),
              max_num_batched_tokens=max(2048, 80 * max(args.batch)), **{"kv_cache_memory": 512 << 20, **extra})
    free = SamplingParams(temperature=0, max_tokens=args.tokens, ignore_eos=True)
    constrained = SamplingParams(temperature=0, max_tokens=args.tokens, structured_outputs={"json_schema": SCHEMA})
    llm.chat([[{"role": "user", "content": "Hi"}]], [free])  # warm-up: kernels, allocator
    llm.chat([[{"role": "user", "content": "Hi"}]], [constrained])  # warm-up: tokenizer, grammar cache
    if args.settle:
        llm.engine.structured.backend.wait_for_templates()
    backend = llm.engine.structured.backend
    for threads in args.mask_threads:
        backend._num_threads = threads or None   # read when the executor is (re)built
        backend._executor = None
        for batch in args.batch:
            measure(llm, batch, args, free, constrained, threads, switch_module.FILL_SWITCH_INTERVAL_S)
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    print(f"device {device}, torch {torch.__version__}, threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
