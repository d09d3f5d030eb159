# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reads `bench_dspark.py --step-log` output: where each engine's time went, against `none`.

Per concurrency and engine: the mean time of one measured call (one batch) and of its first
step, its plain steps (count, mean) and its drafted steps (count per call, ms per call). Then,
for engines whose call ran the same schedule as `none` step for step (same running requests
and prefill tokens at each step: an engine that never drafted), the median extra ms of a
decode step and of a prefill step over `none`'s same step, and the extra ms per call. This is
how session 15 found that a paused step cost +0.02-0.14 ms at 32-256 requests. With `--rounds`,
each call's time split into prefill steps, decode steps, spikes (plain steps over `SPIKE` times
the call's median plain decode step: flushes, syncs, GC pauses) and drafted rounds, with the steps that held
buffered features: how session 17 found two flushes of stale rows (58-231 ms at 256 requests);
and, in logs from session 18 on, the call's time outside its steps (`outside`).

With `--acceptance` (logs from session 24 on), verified and accepted drafts by reply position:
whether an engine drafted where replies are easy or hard. With `--plain`, the plain decode steps
by whether features were buffered (kept while paused). With `--profiles DIR`, drafted rounds
and plain steps against the profiles the proposer read. With `--prefills`, the prefill steps
after each call's first (a closed loop's joiners) by kind. With `--calls`, each engine's call
time over the baseline's in the same round (the sum of its steps' ms): mean, median and the worst
round with its drafted steps, so that one call that drafted a reply the drafter could not follow
(session 25: +41% in the first of 16 calls at 1 request, 2.6% of the cell's mean) is told apart
from a cost every call pays.

Usage:
    python3 packages/deepinfer-dspark/benchmarks/step_log_report.py steps.jsonl.xz [--concurrency 8 64] [--rounds]
        [--acceptance] [--calls] [--prefills] [--plain] [--profiles DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import statistics
from collections import defaultdict
from pathlib import Path

SPIKE = 1.8   # a decode step over this many times its call's median decode step is a spike


def load(path: Path) -> list[dict]:
    """The JSON lines of a step log (xz, gzip or plain, by suffix). Raises OSError (unreadable or
    not of its suffix's compression; `lzma.LZMAError` for a bad xz file) or ValueError (a line that
    is not JSON)."""
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix, open)
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def summary(rows: list[dict]) -> list[dict]:
    """One dict per (concurrency, engine): calls, ms per call, first step ms, plain and drafted steps."""
    groups: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["concurrency"], row["engine"])].append(row)
    out = []
    for (c, engine), steps in sorted(groups.items()):
        calls = len({s["round"] for s in steps})
        plain = [s["ms"] for s in steps if s["kind"] == "plain" and s["step"] > 0]
        drafted = [s["ms"] for s in steps if s["kind"] != "plain"]
        out.append(dict(concurrency=c, engine=engine, calls=calls,
                        ms_per_call=sum(s["ms"] for s in steps) / calls,
                        first_ms=sum(s["ms"] for s in steps if s["step"] == 0) / calls,
                        plain_steps=len(plain), plain_mean_ms=statistics.fmean(plain) if plain else 0.0,
                        drafted_per_call=len(drafted) / calls, drafted_ms_per_call=sum(drafted) / calls))
    return out


def matched(rows: list[dict], baseline: str = "none") -> list[dict]:
    """Per (concurrency, engine != baseline): step-by-step differences from the baseline over
    the steps that ran the same schedule (running requests, prefill tokens). `matched` counts
    them; `mismatched` counts the others (an engine that drafted changes its schedule)."""
    index = {(r["engine"], r["concurrency"], r["round"], r["step"]): r for r in rows}
    diffs: dict[tuple[int, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    calls: dict[tuple[int, str], set[int]] = defaultdict(set)
    for (engine, c, rnd, step), row in index.items():
        if engine == baseline:
            continue
        calls[(c, engine)].add(rnd)
        base = index.get((baseline, c, rnd, step))
        same = base is not None and all(base[k] == row[k] for k in ("running", "prefill_tokens", "kind"))
        if not same:
            diffs[(c, engine)]["mismatched"].append(0.0)
            continue
        diffs[(c, engine)]["prefill" if row["prefill_tokens"] else "decode"].append(row["ms"] - base["ms"])
    out = []
    for (c, engine), kinds in sorted(diffs.items()):
        n = len(calls[(c, engine)])
        entry = dict(concurrency=c, engine=engine, mismatched=len(kinds.get("mismatched", [])))
        for kind in ("decode", "prefill"):
            values = kinds.get(kind, [])
            entry[f"{kind}_steps"] = len(values)
            entry[f"{kind}_median_ms"] = statistics.median(values) if values else 0.0
            entry[f"{kind}_ms_per_call"] = sum(values) / n
        out.append(entry)
    return out


def rounds(rows: list[dict]) -> list[dict]:
    """One dict per (concurrency, round, engine), the call's ms split into `prefill` (steps with
    prompt tokens), `drafted` (rounds whose drafter ran, their flushes included), `spikes` (plain
    steps over `SPIKE` times the call's median plain decode step) and `decode` (the rest);
    `buffered`: steps that began with features buffered (while paused; a declined step drops
    them, so its step begins with rows too); `captured`: steps whose forward captured the
    drafter's features, and `dormant`: steps in a dormant or quiet stretch (None in logs without
    those fields, before session 51); `outside`: the call's wall time minus its steps (None in logs
    without `call_ms`, before session 18)."""
    groups: dict[tuple[int, int, str], list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["concurrency"], row["round"], row["engine"])].append(row)
    out = []
    for (c, rnd, engine), steps in sorted(groups.items()):
        plain = [s["ms"] for s in steps if not s["prefill_tokens"] and s["kind"] == "plain"]
        median = statistics.median(plain) if plain else 0.0
        parts = dict(prefill=0.0, drafted=0.0, spikes=0.0, decode=0.0)
        for s in steps:
            part = ("prefill" if s["prefill_tokens"] else "drafted" if s["kind"] != "plain"
                    else "spikes" if s["ms"] > SPIKE * median else "decode")
            parts[part] += s["ms"]
        wall = next((s["call_ms"] for s in steps if "call_ms" in s), None)
        out.append(dict(concurrency=c, round=rnd, engine=engine, steps=len(steps), **parts,
                        buffered=sum(1 for s in steps if s["buffered"] > 0),
                        captured=sum(s["features"] > 0 for s in steps) if "features" in steps[0] else None,
                        dormant=sum(bool(s["stretch"]) for s in steps) if "stretch" in steps[0] else None,
                        outside=None if wall is None else wall - sum(s["ms"] for s in steps)))
    return out


REPLY_BUCKETS = (0, 32, 64, 128)   # reply positions (tokens) where acceptance is split


def acceptance(rows: list[dict]) -> list[dict]:
    """One dict per (concurrency, engine, reply bucket) with drafts verified: `verified` and
    `accepted` drafts, `reports` (steps whose outputs reported a verification), `rate` (accepted
    / verified) and `per_report` (accepted / reports: accepted drafts a round at 1 request), split
    by the step's `reply` (the shortest running reply before it) into `REPLY_BUCKETS`. Logs from
    session 24 on (rows without `accepted` are skipped). With asynchronous scheduling a step
    reports the tokens of the step before it, so a round may land in the next step's bucket."""
    groups: dict[tuple[int, str, int], list[dict]] = defaultdict(list)
    for row in rows:
        if row.get("verified"):
            bucket = max(b for b in REPLY_BUCKETS if b <= row.get("reply", 0))
            groups[(row["concurrency"], row["engine"], bucket)].append(row)
    out = []
    for (c, engine, bucket), steps in sorted(groups.items()):
        verified, accepted = sum(s["verified"] for s in steps), sum(s["accepted"] for s in steps)
        upper = next((b for b in REPLY_BUCKETS if b > bucket), None)
        out.append(dict(concurrency=c, engine=engine, reply=f"{bucket}-{upper - 1}" if upper else f"{bucket}+",
                        verified=verified, accepted=accepted, reports=len(steps), rate=accepted / verified,
                        per_report=accepted / len(steps)))
    return out


def calls(rows: list[dict], baseline: str = "none") -> list[dict]:
    """One dict per (concurrency, engine other than `baseline`): `rounds` (rounds both ran),
    `mean` and `median` of the engine's call time over the baseline's in the same round, `worst`
    (the highest ratio), `worst_round` and `worst_drafted` (its drafted steps), and `drafting`
    (rounds with a drafted step)."""
    time: dict[tuple[int, str, int], float] = defaultdict(float)
    drafted: dict[tuple[int, str, int], int] = defaultdict(int)
    for row in rows:
        key = (row["concurrency"], row["engine"], row["round"])
        time[key] += row["ms"]
        drafted[key] += row["kind"].startswith("drafted")
    out = []
    for c, engine in sorted({(c, e) for c, e, _ in time if e != baseline}):
        ratios = {r: time[(c, engine, r)] / time[(c, baseline, r)] for cc, e, r in time
                  if cc == c and e == engine and time.get((c, baseline, r))}
        if not ratios:
            continue
        worst = max(ratios, key=ratios.get)
        out.append(dict(concurrency=c, engine=engine, rounds=len(ratios), mean=statistics.mean(ratios.values()),
                        median=statistics.median(ratios.values()), worst=ratios[worst], worst_round=worst,
                        worst_drafted=drafted[(c, engine, worst)],
                        drafting=sum(1 for r in ratios if drafted[(c, engine, r)])))
    return out


def plain_steps(rows: list[dict]) -> list[dict]:
    """The plain decode steps (no prefill tokens, not a call's first), one dict per (concurrency,
    engine, features buffered before the step): `steps` and `median_ms`. In logs of a paused
    proposer, steps with features buffered kept them (paused at a load where drafting may pay),
    the others declined them or ran dormant: session 26 found the first 0.24 ms dearer at 1
    request on the H200 (1.301 against 1.063 ms)."""
    groups: dict[tuple[int, str, bool], list[float]] = defaultdict(list)
    for row in rows:
        if row["kind"] == "plain" and not row.get("prefill_tokens") and row["step"] > 0:
            groups[(row["concurrency"], row["engine"], row["buffered"] > 0)].append(row["ms"])
    return [dict(concurrency=c, engine=engine, buffered=buffered, steps=len(ms), median_ms=statistics.median(ms))
            for (c, engine, buffered), ms in sorted(groups.items())]


def profile_file(folder: Path, stem: str) -> Path:
    """`folder/<stem>.json`, or the one `<stem>_*.json` there (`--save-sps DIR/sps_X.json` names).

    Raises:
        FileNotFoundError: neither, or several `<stem>_*.json` (names them).
    """
    exact = folder / f"{stem}.json"
    if exact.exists():
        return exact
    found = sorted(p for p in folder.glob(f"{stem}_*.json") if stem != "sps" or not p.name.startswith("spec_"))
    if len(found) != 1:
        raise FileNotFoundError(f"--profiles: expected {exact.name} or one {stem}_*.json in {folder}, found "
                                f"{[p.name for p in found]}")
    return found[0]


def against_profiles(rows: list[dict], decode, spec, k: int, least: int = 5) -> list[dict]:
    """Steps against the profiles the proposer priced them with: per (concurrency, engine,
    requests running), the median ms of the drafted rounds (kind exactly "drafted": no flush,
    no capture, no eager draft; no prefill) and of the plain decode steps (not a call's first),
    each with the profile's time (`spec` at B (1 + k) tokens, `decode` at B) and their ratio;
    cells with fewer than `least` steps are left out. Session 27 read rounds at 1.2-1.5x their
    profile at 8 requests where plain steps ran within 3% of theirs (`measure_round_times`)."""
    groups: dict[tuple[int, str, int, str], list[float]] = defaultdict(list)
    for row in rows:
        if row.get("prefill_tokens") or row["kind"] not in ("plain", "drafted"):
            continue
        if row["kind"] == "plain" and row["step"] == 0:
            continue
        groups[(row["concurrency"], row["engine"], row["running"], row["kind"])].append(row["ms"])
    out = []
    for (c, engine, running, kind), ms in sorted(groups.items()):
        if len(ms) < least or running < 1:
            continue
        profile = 1e3 / (spec.at(running * (1 + k)) if kind == "drafted" else decode.at(running))
        median = statistics.median(ms)
        out.append(dict(concurrency=c, engine=engine, running=running, kind=kind, steps=len(ms), median_ms=median,
                        profile_ms=profile, ratio=median / profile))
    return out


def prefills(rows: list[dict]) -> list[dict]:
    """The steps with prefill tokens after each call's first (in a closed loop, `--closed-loop`: a
    joiner's prompt beside the running requests' decode or verification), one dict per
    (concurrency, engine, kind, features buffered before the step): `steps`, `median_ms`,
    `tokens` (mean prefill tokens), and `share` (their ms over all the engine's ms at that
    concurrency). Session 26 found them ~30 ms each on the H200 (eager, host-bound), half of a
    closed-loop call's time at 8 requests, and 2-4 ms dearer where features were kept."""
    total: dict[tuple[int, str], float] = defaultdict(float)
    groups: dict[tuple[int, str, str, bool], list[dict]] = defaultdict(list)
    for row in rows:
        total[(row["concurrency"], row["engine"])] += row["ms"]
        if row.get("prefill_tokens") and row["step"] > 0:
            groups[(row["concurrency"], row["engine"], row["kind"], row["buffered"] > 0)].append(row)
    return [dict(concurrency=c, engine=engine, kind=kind, buffered=buffered, steps=len(steps),
                 median_ms=statistics.median(s["ms"] for s in steps),
                 tokens=statistics.mean(s["prefill_tokens"] for s in steps),
                 share=sum(s["ms"] for s in steps) / total[(c, engine)])
            for (c, engine, kind, buffered), steps in sorted(groups.items())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\nUsage")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path, help="steps.jsonl, .jsonl.xz or .jsonl.gz from bench_dspark.py --step-log")
    parser.add_argument("--concurrency", type=int, nargs="*", default=None, help="only these concurrencies")
    parser.add_argument("--baseline", default="none", help="the engine the others are matched against")
    parser.add_argument("--rounds", action="store_true", help="also each call's time by kind of step (`rounds`)")
    parser.add_argument("--calls", action="store_true",
                        help="also each engine's call time over the baseline's, round by round (`calls`)")
    parser.add_argument("--plain", action="store_true",
                        help="also the plain decode steps by whether features were buffered (`plain_steps`)")
    parser.add_argument("--prefills", action="store_true",
                        help="also the prefill steps after each call's first, by kind (`prefills`)")
    parser.add_argument("--profiles", type=Path, default=None, metavar="DIR",
                        help="also the drafted rounds and plain steps against the profiles in DIR (sps.json and "
                             "spec_sps.json, or one sps_X.json and spec_sps_X.json: `bench_dspark.py --save-sps`), "
                             "by requests running (`against_profiles`)")
    parser.add_argument("--k", type=int, default=7, help="with --profiles: drafts per request of the k-round profile")
    parser.add_argument("--acceptance", action="store_true",
                        help="also verified and accepted drafts by reply position (`acceptance`; logs from session 24)")
    args = parser.parse_args()
    if not args.log.is_file():
        parser.error(f"log: no such file: {args.log}")
    try:
        rows = load(args.log)
    except (OSError, ValueError, EOFError, lzma.LZMAError) as exc:   # not xz or gzip / not JSON lines
        parser.error(f"log: cannot read {args.log} as JSON lines ({type(exc).__name__}: {exc})")
    engines = {r.get("engine") for r in rows}
    if args.baseline not in engines:
        parser.error(f"--baseline: no engine {args.baseline!r} in the log (engines: {sorted(map(str, engines))})")
    if args.concurrency:
        missing = sorted(set(args.concurrency) - {r.get("concurrency") for r in rows})
        if missing:
            parser.error(f"--concurrency: {missing} not in the log")
        rows = [r for r in rows if r["concurrency"] in args.concurrency]
    print("Times in ms. A call is one measured batch of `requests` requests (bench_dspark.py --interleave "
          "runs several per engine); drafted steps are verification rounds.")
    print()
    print("| requests | engine | calls | ms/call | first step ms | plain steps | plain mean ms | drafted/call "
          "| drafted ms/call |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for s in summary(rows):
        print(f"| {s['concurrency']} | {s['engine']} | {s['calls']} | {s['ms_per_call']:.1f} | {s['first_ms']:.1f} "
              f"| {s['plain_steps']} | {s['plain_mean_ms']:.3f} | {s['drafted_per_call']:.1f} "
              f"| {s['drafted_ms_per_call']:.1f} |")
    print()
    print(f"Steps run as {args.baseline} ran them (same running requests and prefill tokens): the median "
          f"extra ms of one step, and the extra ms summed over a call; other steps: those with another schedule.")
    print("| requests | engine | matched decode | decode median | decode/call | matched prefill | prefill median "
          "| prefill/call | other steps |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for m in matched(rows, args.baseline):
        print(f"| {m['concurrency']} | {m['engine']} | {m['decode_steps']} | {m['decode_median_ms']:+.3f} "
              f"| {m['decode_ms_per_call']:+.1f} | {m['prefill_steps']} | {m['prefill_median_ms']:+.3f} "
              f"| {m['prefill_ms_per_call']:+.1f} | {m['mismatched']} |")
    if args.rounds:
        print()
        print(f"Each call by kind of step (ms; spikes: plain steps over {SPIKE}x the call's median plain "
              f"decode step; buffered: steps that began with features buffered; captured: steps that captured "
              f"features; dormant: steps of a dormant or quiet stretch).")
        print("| requests | round | engine | steps | prefill | decode | spikes | drafted | buffered | captured "
              "| dormant | outside |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rounds(rows):
            outside = "-" if r["outside"] is None else f"{r['outside']:.1f}"
            cells = ["-" if r[key] is None else str(r[key]) for key in ("captured", "dormant")]
            print(f"| {r['concurrency']} | {r['round']} | {r['engine']} | {r['steps']} | {r['prefill']:.1f} "
                  f"| {r['decode']:.1f} | {r['spikes']:.1f} | {r['drafted']:.1f} | {r['buffered']} | "
                  f"{' | '.join(cells)} | {outside} |")
    if args.calls:
        print()
        print(f"Call time over {args.baseline}'s in the same round (sum of the steps' ms): mean, median, the "
              f"worst round and its drafted steps; drafting: rounds with a drafted step.")
        print("| requests | engine | rounds | mean | median | worst (round: drafted steps) | drafting |")
        print("|---:|---|---:|---:|---:|---|---:|")
        for a in calls(rows, args.baseline):
            print(f"| {a['concurrency']} | {a['engine']} | {a['rounds']} | {a['mean']:.3f} | {a['median']:.3f} "
                  f"| {a['worst']:.3f} ({a['worst_round']}: {a['worst_drafted']}) | {a['drafting']} |")
    if args.plain:
        print()
        print("Plain decode steps by whether features were buffered before the step (kept while paused) or not "
              "(declined, dormant, or an engine without speculation).")
        print("| requests | engine | buffered | steps | median ms |")
        print("|---:|---|---|---:|---:|")
        for p in plain_steps(rows):
            print(f"| {p['concurrency']} | {p['engine']} | {'yes' if p['buffered'] else 'no'} | {p['steps']} "
                  f"| {p['median_ms']:.3f} |")
    if args.prefills:
        print()
        print("Prefill steps after each call's first (a closed loop's joiners), by kind and whether features "
              "were buffered before the step; share: their ms over all the engine's ms at that load.")
        print("| requests | engine | kind | buffered | steps | median ms | prefill tokens | share |")
        print("|---:|---|---|---|---:|---:|---:|---:|")
        for p in prefills(rows):
            print(f"| {p['concurrency']} | {p['engine']} | {p['kind']} | {'yes' if p['buffered'] else 'no'} "
                  f"| {p['steps']} | {p['median_ms']:.2f} | {p['tokens']:.0f} | {p['share']:.3f} |")
    if args.profiles is not None:
        from deepinfer_dspark.sps import SPSProfile

        decode, spec = (SPSProfile.load(profile_file(args.profiles, stem)) for stem in ("sps", "spec_sps"))
        print()
        print(f"Steps against the profiles of {args.profiles} (k = {args.k}): median ms by requests running; "
              f"drafted: rounds without a flush, capture or eager draft.")
        print("| requests | engine | running | kind | steps | median ms | profile ms | ratio |")
        print("|---:|---|---:|---|---:|---:|---:|---:|")
        for a in against_profiles(rows, decode, spec, args.k):
            print(f"| {a['concurrency']} | {a['engine']} | {a['running']} | {a['kind']} | {a['steps']} "
                  f"| {a['median_ms']:.3f} | {a['profile_ms']:.3f} | {a['ratio']:.2f} |")
    if args.acceptance:
        print()
        print("Verified and accepted drafts by reply position (the shortest running reply before the step, "
              "tokens); per report: accepted drafts per step that reported a verification.")
        print("| requests | engine | reply | reports | verified | accepted | accepted / verified | per report |")
        print("|---:|---|---|---:|---:|---:|---:|---:|")
        for a in acceptance(rows):
            print(f"| {a['concurrency']} | {a['engine']} | {a['reply']} | {a['reports']} | {a['verified']} "
                  f"| {a['accepted']} | {a['rate']:.3f} | {a['per_report']:.2f} |")


if __name__ == "__main__":
    main()
