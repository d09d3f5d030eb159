# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Host time of `OutputProcessor.process` per decode step: text held to the end vs token by token.

On the H200, 31-41% of a plain `LLM.chat` call's wall time at 64-256 requests was outside
`engine.step` (session 57's step logs), about half of it, in this CPU's profile, the output
processing of every step: incremental detokenizing (two `tokenizer.decode` calls a token) and
stop strings. A completion without stop strings now gets its text once, when it ends
(`FinalDetokenizer`); one with stop strings is still detokenized token by token. This times both
on the same outputs: `--concurrency` requests with the real SmolLM2 tokenizer, each emitting one
token a step (ids of real text: the repository's README re-encoded) for `--tokens` steps and then
finishing ("length"), the modes in rotated order `--repeats` times in one process; printed, the
median microseconds a step and a token, and the ratio to the text held to the end. The mode
"before" is every completion as it ran before (token by token, no stop string). Only `process` is timed: the engine's
step is not run (no model).

    python3 packages/deepinfer-core/benchmarks/output_processing.py [--concurrency 64 128 256] [--tokens 128]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

# mode -> (stop strings, detokenize token by token without them: how every completion ran before)
MODES = {"held to the end (no stop string)": (None, False),
         "token by token, no stop string (before)": (None, True),
         "token by token (a stop string)": (["\x00never"], False)}


def corpus_ids(tokenizer) -> list[int]:
    text = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    return tokenizer.encode(text, add_special_tokens=False).ids


def one_call(tokenizer, ids: list[int], concurrency: int, tokens: int, mode: tuple[list[str] | None, bool]) -> float:
    """Seconds in `process` over one call's steps (`concurrency` requests, `tokens` steps)."""
    from deepinfer_core.engine.engine_core import EngineCoreOutput
    from deepinfer_core.engine.output_processor import OutputProcessor, make_detokenizer
    from deepinfer_core.sampling_params import SamplingParams

    stop, as_before = mode
    processor = OutputProcessor(tokenizer)
    params = SamplingParams(max_tokens=tokens, stop=stop)
    for i in range(concurrency):
        start = (i * 97) % (len(ids) - tokens - 8)
        state = processor.add(str(i), None, ids[start:start + 8], params, [str(i)])
        if as_before:   # the incremental detokenizer without a stop string
            completion = state.completions[0]
            completion.streaming, completion.detokenizer = True, make_detokenizer(tokenizer, ids[start:start + 8])
    spent = 0.0
    for k in range(tokens):
        finish = "length" if k == tokens - 1 else None
        outs = [EngineCoreOutput(str(i), [ids[(i * 97) % (len(ids) - tokens - 8) + 8 + k]], finish_reason=finish)
                for i in range(concurrency)]
        t0 = time.perf_counter()
        processor.process(outs)
        spent += time.perf_counter() - t0
    assert not processor.has_unfinished()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--tokens", type=int, default=128, help="steps a call (one token a request a step)")
    parser.add_argument("--repeats", type=int, default=5, help="calls per mode, alternated; the median is kept")
    args = parser.parse_args()

    from deepinfer_core.assets import default_model_path
    from deepinfer_core.loader import load_tokenizer

    tokenizer = load_tokenizer(default_model_path()).backend_tokenizer
    ids = corpus_ids(tokenizer)
    print(f"OutputProcessor.process, SmolLM2 tokenizer, {args.tokens} steps a call, median of {args.repeats}")
    print("| requests | mode | us a step | us a token | over held to the end |")
    print("|---:|---|---:|---:|---:|")
    for c in args.concurrency:
        spent: dict[str, list[float]] = {m: [] for m in MODES}
        for r in range(args.repeats):
            order = list(MODES)[r % len(MODES):] + list(MODES)[:r % len(MODES)]
            for mode in order:
                spent[mode].append(one_call(tokenizer, ids, c, args.tokens, MODES[mode]))
        medians = {m: statistics.median(v) for m, v in spent.items()}
        held = medians[next(iter(MODES))]
        for mode, s in medians.items():
            ratio = f"{s / held:.2f}"
            print(f"| {c} | {mode} | {1e6 * s / args.tokens:.0f} | {1e6 * s / args.tokens / c:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
