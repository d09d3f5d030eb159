# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`deepinfer generate`: run prompts (plain or chat) through the engine and print or save the answers."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.console import Console

from deepinfer_cli.commands.engine_args import (
    add_engine_args, add_sampling_args, add_structured_args, engine_kwargs, sampling_kwargs, structured_kwargs)
from deepinfer_cli.progress import GenerationProgress


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("generate", help="generate text for one prompt or a JSONL file of prompts")
    p.add_argument("prompt", nargs="?", help="the prompt text (with --chat: the user message)")
    p.add_argument("--chat", action="store_true", help="wrap the prompt as a user message in the chat template")
    p.add_argument("--system", default=None, help="system message for --chat")
    p.add_argument("--prompts-file", type=Path, default=None,
                   help='JSONL: one {"prompt": str} | {"messages": [...]} | {"prompt_token_ids": [...]} per line, '
                        'optional "sampling_params": {...} overrides')
    p.add_argument("--output", type=Path, default=None,
                   help="write one JSON result per line here (the texts then go to this file only, not to the terminal)")
    add_engine_args(p)
    add_sampling_args(p)
    add_structured_args(p)
    p.set_defaults(run=run)


def load_requests(args: argparse.Namespace) -> list[dict]:
    """Turn the command line into request dicts with exactly one of prompt / messages / prompt_token_ids.

    Raises:
        ValueError: no prompt given, or a malformed JSONL line (names the line and the field).
    """
    if args.prompts_file is None:
        if args.prompt is None:
            raise ValueError("prompt: give a prompt argument or --prompts-file")
        if args.chat:
            messages = ([{"role": "system", "content": args.system}] if args.system else [])
            return [{"messages": messages + [{"role": "user", "content": args.prompt}]}]
        return [{"prompt": args.prompt}]
    try:
        text = args.prompts_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--prompts-file: cannot read {args.prompts_file}: {exc}") from None
    requests = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--prompts-file line {lineno}: not JSON ({exc.msg})") from None
        except (ValueError, RecursionError) as exc:   # nested too deeply, an integer of too many digits
            raise ValueError(f"--prompts-file line {lineno}: not usable JSON ({type(exc).__name__}: "
                             f"{str(exc)[:80]})") from None
        kinds = [k for k in ("prompt", "messages", "prompt_token_ids") if k in item] if isinstance(item, dict) else []
        if len(kinds) != 1:
            raise ValueError(f"--prompts-file line {lineno}: needs exactly one of prompt, messages, prompt_token_ids")
        _check_types(item, kinds[0], f"--prompts-file line {lineno}")
        if args.chat and "prompt" in item:
            item = {**{k: v for k, v in item.items() if k != "prompt"},
                    "messages": [{"role": "user", "content": item["prompt"]}]}
        requests.append(item)
    if not requests:
        raise ValueError("--prompts-file: no requests in the file")
    return requests


_TYPES = {"prompt": (str, "a string"), "messages": (list, "a list of message objects"),
          "prompt_token_ids": (list, "a list of token ids"), "sampling_params": (dict, "an object")}


def _check_types(item: dict, kind: str, where: str) -> None:
    """Checks the JSON types of one request's fields (their values are checked by the engine)."""
    for key in (kind, "sampling_params"):
        if key in item and not isinstance(item[key], _TYPES[key][0]):
            raise ValueError(f"{where}: {key} must be {_TYPES[key][1]}, got {type(item[key]).__name__}")


def sampling_defaults(args: argparse.Namespace) -> dict:
    """CLI defaults (greedy, up to 256 tokens) overridden by the sampling and structured-output flags."""
    return {"temperature": 0.0, "max_tokens": 256, **sampling_kwargs(args), **structured_kwargs(args)}


def build_params(args: argparse.Namespace, requests: list[dict]) -> list:
    """One SamplingParams per request: CLI defaults (greedy, up to 256 tokens), flags, per-request overrides.

    Raises:
        ValueError: an invalid flag value (a structured-output flag's regex, grammar or schema is
            compiled here, without the model, unless every request sets its own), or a request's
            `sampling_params` has an unknown or invalid field (names the request and the field).
    """
    from deepinfer_core import SamplingParams

    base = sampling_defaults(args)
    flag = SamplingParams(**base)  # a bad flag is named as such, not as a request's error
    used = any("structured_outputs" not in r.get("sampling_params", {}) for r in requests)
    if flag.structured_outputs is not None and used:   # compiled without the model: fails before loading it
        try:
            flag.structured_outputs.check()
        except ValueError as exc:
            raise ValueError(f"--{flag.structured_outputs.kind.replace('_', '-')}: {exc}") from None
    params = []
    for i, r in enumerate(requests):
        try:
            params.append(SamplingParams(**{**base, **r.get("sampling_params", {})}))
        except (TypeError, ValueError) as exc:  # TypeError: an unknown field
            raise ValueError(f"request {i} sampling_params: {exc}") from None
    return params


def run(args: argparse.Namespace) -> int:
    requests = load_requests(args)  # bad input fails before the heavy import
    if args.output is not None and not args.output.parent.is_dir():
        raise ValueError(f"--output: folder {args.output.parent} does not exist")
    if args.output is not None and args.output.is_dir():
        raise ValueError(f"--output: {args.output} is a folder, not a file")
    from deepinfer_core import LLM, SamplingParams

    params = build_params(args, requests)  # before the model load, too
    console = Console()
    with console.status("loading model"):
        llm = LLM(**engine_kwargs(args))
    # Flag values bounded by the vocabulary (top_k, logprobs) fail the run, not each request.
    SamplingParams(**sampling_defaults(args)).validate(llm.model_config.vocab_size)

    # Warm-up (excluded from the throughput line): one token of a short prompt, so the line
    # measures steady-state generation, not first-call allocation and kernel loading.
    llm.generate([{"prompt_token_ids": [0]}], SamplingParams(max_tokens=1, temperature=0.0))

    start = time.perf_counter()
    results = [None] * len(requests)
    with GenerationProgress(console, total=len(requests)) as progress:
        chat_idx = [i for i, r in enumerate(requests) if "messages" in r]
        plain_idx = [i for i, r in enumerate(requests) if "messages" not in r]
        if chat_idx:
            outs = llm.chat([requests[i]["messages"] for i in chat_idx], [params[i] for i in chat_idx],
                            on_progress=progress.update)
            for i, out in zip(chat_idx, outs):
                results[i] = out
        if plain_idx:
            prompts = [requests[i]["prompt"] if "prompt" in requests[i]
                       else {"prompt_token_ids": requests[i]["prompt_token_ids"]} for i in plain_idx]
            outs = llm.generate(prompts, [params[i] for i in plain_idx], on_progress=progress.update)
            for i, out in zip(plain_idx, outs):
                results[i] = out
    elapsed = time.perf_counter() - start

    report(console, results, elapsed, args.output, [p.structured_outputs is not None for p in params],
           speculative=getattr(args, "speculative_config", None) is not None)
    return 1 if any(getattr(r, "error", None) for r in results) else 0


def report(console: Console, results: list, elapsed: float, output: Path | None,
           structured: list[bool] | None = None, speculative: bool = False) -> None:
    """Print answers (or write JSONL) and one throughput line counting only emitted tokens (and the
    prompt tokens of requests that did not fail); no throughput line when every request failed.
    A structured output cut by its token limit gets a warning: it does not match its schema or
    pattern. With `speculative` (or when drafts were verified), a line sums the verification
    counters, also when no draft was verified."""
    prompt_tokens = sum(len(r.prompt_token_ids or []) for r in results if not getattr(r, "error", None))
    output_tokens = sum(len(c.token_ids) for r in results for c in r.outputs)
    if output is not None:
        try:
            with output.open("w", encoding="utf-8") as f:
                for i, r in enumerate(results):
                    f.write(json.dumps(result_dict(i, r), ensure_ascii=False) + "\n")
        except OSError as exc:
            raise ValueError(f"--output: cannot write {output}: {exc}") from None
    else:
        for i, r in enumerate(results):
            if len(results) > 1:
                console.rule(f"request {i}")
            if getattr(r, "error", None):
                console.print(f"[red]error:[/red] {r.error}", soft_wrap=True, markup=True, highlight=False)
            for c in r.outputs:
                print(c.text, flush=True)  # the exact text: no wrapping or markup from rich
    for i, r in enumerate(results):
        cut = [c for c in r.outputs if c.finish_reason == "length"]
        if structured is not None and structured[i] and cut and not getattr(r, "error", None):
            console.print(f"[yellow]warning:[/yellow] request {i}: {len(cut)} output(s) stopped at the token "
                          "limit, so they may be incomplete (not matching the schema or pattern); raise "
                          "--max-tokens, or bound the schema (maximum, maxLength, maxItems): small models "
                          "can repeat inside an unbounded number or string", soft_wrap=True)
    if results and all(getattr(r, "error", None) for r in results):
        return
    metrics = [r.metrics for r in results if getattr(r, "metrics", None) is not None]
    rounds = sum(m.spec_rounds for m in metrics)
    if rounds or speculative:   # the engine's counters, summed over requests
        verified, accepted = sum(m.spec_verified for m in metrics), sum(m.spec_accepted for m in metrics)
        mean = f"{(accepted + rounds) / rounds:.2f} tokens a round" if rounds else "- (no round verified drafts)"
        console.print(f"[bold]speculative:[/bold] {rounds} verification rounds, {verified} drafts verified, "
                      f"{accepted} accepted; mean accepted length {mean}", soft_wrap=True)
    rate = output_tokens / elapsed if elapsed > 0 else 0.0
    console.print(f"[bold]throughput:[/bold] {len(results)} requests, {prompt_tokens} prompt tokens, "
                  f"{output_tokens} output tokens in {elapsed:.2f} s: {rate:.1f} output tok/s, "
                  f"{(prompt_tokens + output_tokens) / max(elapsed, 1e-9):.1f} total tok/s "
                  f"(warm-up excluded)", soft_wrap=True)


def result_dict(index: int, r) -> dict:
    """JSON-serialisable view of one RequestOutput."""
    return {
        "index": index,
        "request_id": r.request_id,
        "prompt": r.prompt,
        "prompt_token_ids": r.prompt_token_ids,
        "error": getattr(r, "error", None),
        "outputs": [{"index": c.index, "text": c.text, "token_ids": list(c.token_ids),
                     "finish_reason": c.finish_reason, "stop_reason": c.stop_reason} for c in r.outputs],
    }
