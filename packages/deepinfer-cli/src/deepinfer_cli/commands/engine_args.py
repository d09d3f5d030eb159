# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Engine and sampling flags shared by every sub-command."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

_UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "kb": 10**3, "mb": 10**6, "gb": 10**9}


def parse_bytes(text: str, flag: str = "--kv-cache-memory") -> int:
    """Parse a memory size such as `512MiB`, `2GiB` or `1000000` into bytes.

    Raises:
        argparse.ArgumentTypeError: the text is not a number with an optional unit (names `flag`).
    """
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"{flag}: expected a size like 2GiB, got {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def parse_json_object(text: str) -> dict:
    """Parse a JSON object given on the command line (e.g. `{"method": "ngram", "num_speculative_tokens": 3}`).

    Raises:
        argparse.ArgumentTypeError: the text is not JSON, or not an object (argparse names the flag).
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:   # nested too deeply, an integer of too many digits
        raise argparse.ArgumentTypeError(f"not usable JSON ({type(exc).__name__}: {str(exc)[:80]})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {json_type(value)}")
    return value


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type (null, array, string, number, boolean, object)."""
    names = {type(None): "null", list: "an array", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def add_engine_args(parser: argparse.ArgumentParser) -> None:
    """Flags that map one to one onto `deepinfer_core.LLM` keyword arguments."""
    g = parser.add_argument_group("engine")
    g.add_argument("--model", default=None,
                   help="HF checkpoint folder or GGUF file (default: SmolLM2-135M-Instruct, fetched on first use)")
    g.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    g.add_argument("--device", default=None, help="torch device, e.g. cuda, cuda:1, cpu (default: cuda when "
                   "available, else cpu)")
    g.add_argument("--max-model-len", type=int, default=None, help="longest prompt + output, in tokens")
    g.add_argument("--max-num-seqs", type=int, default=None, help="most requests in one step")
    g.add_argument("--max-num-batched-tokens", type=int, default=None, help="token budget of one step")
    g.add_argument("--kv-cache-memory", type=parse_bytes, default=None, help="KV pool size, e.g. 1GiB")
    g.add_argument("--block-size", type=int, default=None, help="tokens per KV block")
    g.add_argument("--no-chunked-prefill", action="store_true", help="prefill each prompt in one step")
    g.add_argument("--load-format", default=None, choices=["auto", "dummy"],
                   help="dummy: seeded random weights (the model folder may hold only config.json)")
    g.add_argument("--enforce-eager", action="store_true",
                   help="never capture CUDA graphs (decode, prefill and mixed steps all run eagerly; "
                        "CUDA only: steps always run eagerly on the CPU)")
    g.add_argument("--mixed-cuda-graphs", action=argparse.BooleanOptionalAction, default=None,
                   help="on CUDA, replay prefill and mixed steps of up to 8192 tokens from CUDA graphs, as decode "
                        "steps are (default: on; --no-mixed-cuda-graphs runs them eagerly; no effect on the CPU)")
    g.add_argument("--no-async-scheduling", action="store_true",
                   help="wait for each step's tokens before scheduling the next (overlap off)")
    g.add_argument("--no-freeze-heap", action="store_true",
                   help="leave the garbage collector alone during a call (default: the objects alive when a "
                        "call starts are kept out of its passes, EngineConfig.freeze_heap)")
    g.add_argument("--deterministic", action="store_true",
                   help="batch-invariant kernels: a request's output does not depend on its neighbours")
    g.add_argument("--speculative-config", type=parse_json_object, default=None, metavar="JSON",
                   help='speculative decoding, as LLM(speculative_config=...): e.g. \'{"method": "ngram", '
                        '"num_speculative_tokens": 3}\' or a DSpark drafter \'{"method": "dspark", "model": '
                        '"drafter/", "num_speculative_tokens": 3}\' (lossless: the output is the target\'s)')


def engine_kwargs(args: argparse.Namespace) -> dict:
    """The `LLM(...)` keyword arguments set on the command line (unset flags keep the engine default)."""
    pairs = {
        "model": args.model, "dtype": args.dtype, "max_model_len": args.max_model_len,
        "max_num_seqs": args.max_num_seqs, "max_num_batched_tokens": args.max_num_batched_tokens,
        "kv_cache_memory": args.kv_cache_memory, "block_size": args.block_size,
        "load_format": args.load_format, "device": args.device,
        "speculative_config": getattr(args, "speculative_config", None),
    }
    kwargs = {k: v for k, v in pairs.items() if v is not None}
    if args.no_chunked_prefill:
        kwargs["enable_chunked_prefill"] = False
    if args.enforce_eager:
        kwargs["enforce_eager"] = True
    if getattr(args, "mixed_cuda_graphs", None) is not None:
        kwargs["mixed_cuda_graphs"] = args.mixed_cuda_graphs
    if args.deterministic:
        kwargs["deterministic"] = True
    if args.no_async_scheduling:
        kwargs["async_scheduling"] = False
    if getattr(args, "no_freeze_heap", False):
        kwargs["freeze_heap"] = False
    return kwargs


def add_sampling_args(parser: argparse.ArgumentParser) -> None:
    """Flags that map onto `deepinfer_core.SamplingParams` fields."""
    g = parser.add_argument_group("sampling (generate defaults: greedy, max 256 tokens)")
    g.add_argument("--temperature", type=float, default=None)
    g.add_argument("--top-p", type=float, default=None)
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--min-p", type=float, default=None)
    g.add_argument("--max-tokens", type=int, default=None)
    g.add_argument("--min-tokens", type=int, default=None)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--n", type=int, default=None, help="completions per prompt")
    g.add_argument("--stop", action="append", default=None, help="stop string (repeatable)")
    g.add_argument("--repetition-penalty", type=float, default=None)
    g.add_argument("--presence-penalty", type=float, default=None)
    g.add_argument("--frequency-penalty", type=float, default=None)
    g.add_argument("--ignore-eos", action="store_true", default=None)
    g.add_argument("--logprobs", type=int, default=None, help="top-N logprobs per output token")


SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "min_p", "max_tokens", "min_tokens", "seed", "n",
                   "stop", "repetition_penalty", "presence_penalty", "frequency_penalty", "ignore_eos",
                   "logprobs")


def sampling_kwargs(args: argparse.Namespace) -> dict:
    """The `SamplingParams(...)` fields set on the command line."""
    return {f: getattr(args, f) for f in SAMPLING_FIELDS if getattr(args, f, None) is not None}


def load_json_schema(path: str) -> dict:
    """Read a JSON Schema file (the `--json-schema` flag).

    Raises:
        argparse.ArgumentTypeError: the file cannot be read, is not JSON, or is not a JSON object
            (argparse prefixes the message with the flag's name).
    """
    try:
        schema = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{path} is not JSON ({exc.msg}, line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:   # nested too deeply, an integer of too many digits
        raise argparse.ArgumentTypeError(f"{path} is not usable JSON ({type(exc).__name__}: {str(exc)[:80]})") \
            from None
    if not isinstance(schema, dict):
        raise argparse.ArgumentTypeError(f"{path} must hold a JSON object, got {json_type(schema)}")
    return schema


def add_structured_args(parser: argparse.ArgumentParser) -> None:
    """Structured-output flags (at most one): the output must match a JSON schema, a regex or a choice."""
    g = parser.add_argument_group("structured output (at most one)").add_mutually_exclusive_group()
    g.add_argument("--json-schema", type=load_json_schema, default=None, metavar="FILE",
                   help="the output is JSON valid under this JSON Schema file")
    g.add_argument("--regex", default=None, metavar="PATTERN", help="the output fully matches this regex")
    g.add_argument("--choice", action="append", default=None, metavar="TEXT",
                   help="the output is exactly one of these strings (repeatable)")


def structured_kwargs(args: argparse.Namespace) -> dict:
    """`{"structured_outputs": {...}}` for the structured-output flag given, else `{}`."""
    for flag in ("json_schema", "regex", "choice"):
        value = getattr(args, flag, None)
        if value is not None:
            return {"structured_outputs": {flag: value}}
    return {}
