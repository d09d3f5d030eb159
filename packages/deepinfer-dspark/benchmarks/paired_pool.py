# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Pools `bench_dspark.py` logs' paired rounds: one engine against another, round by round,
with a bootstrap interval, so a goal like "never below plain decoding" is read against the
noise floor of the same runs.

Each row of a `bench_dspark.py` log (`bench_batch.log`) ends with `paired rounds [...]`: every
round's output tok/s over the first engine's in the same round (the same prompts, the engines'
calls back to back, `paired_calls.run_paired`). For each concurrency and engine this prints the
geometric mean and the median of those ratios over the rounds kept, and for `--engine A` against
`--against B` the per-round ratio A/B (both already over the same first engine, so A/B is A's
tok/s over B's in that round). Rounds traced by a step log (`--step-log-every M`: rounds r with
r % M == 0, whose harness favours engines with fewer steps) are dropped with `--drop-every M`
(one value for every log, or one per log; 0 keeps all).

Pooled over the cells of `--concurrency` (all by default): the geometric mean of A/B and the
2.5-97.5 percentile interval of 20,000 bootstrap means (Efron's percentile bootstrap, seed 0),
for A against B and for each against the first engine. The rounds are resampled with
replacement across all pooled cells as one sample: each cell weighs by its rounds, and the
interval is for the mean round of that pool (not a per-cell estimate; pool cells of like
loads). An interval holding 1 says the logs do not tell A from B. A plain-decoding-again engine
(`none-again`) against the first engine (`none`) is the floor's own reading. `paired_calls`
rotates the engines' order each round; rounds left after `--drop-every` may not cover every
order (its log warns so), and the pool inherits that bias.

The bootstrap treats every round as independent, but the engines of one process can differ as a
whole by a few percent (session 63: plain decoding's decode steps 1.171 ms on average against
plain decoding again's 1.106 in one H100 process), so the rounds of a process are not. `--by-log`
also prints each log's (process's) geometric mean of A/B over its pooled cells, and across the
logs their geometric mean with a Student t 95% interval (the logs as the sample, n - 1 degrees of
freedom) and how many read below 1: the reading to quote when the processes disagree. A log that
says the order its engines were built in (`bench_dspark.py --build-rotate`, session 84) also gets
each compared engine's place in it (`confidence#2`: built second).

`--quantiles` also prints the pooled rounds' quantiles of each ratio (`QUANTILES`, nearest rank): a
shifted distribution and a fat lower tail read alike in a geometric mean. Session 76 read it over
every run34 process of sessions 63-75 at 8 requests on the H100 (75 processes, 902 rounds): the
default over plain decoding again 0.868 / 0.929 / 0.988 / 1.003 at the 10th / 20th / 50th / 80th
percentiles, plain decoding again over plain decoding 0.944 / 0.991 / 1.001 / 1.010: a median ~1%
low and a lower tail far below the floor's (the calls that drafted; `drafted_calls.py`).

`--split-drafted` (session 78) splits the pooled A/B rounds by what A's call of the round did (the
row's `call drafts [...] call dspark [...]`, logged from session 78 on, untraced rounds too): drafted
a DSpark round, verified prompt-lookup drafts alone, or neither; for each, the rounds, their share,
their geometric mean with its bootstrap interval, and their part of the pooled mean's log (share x
mean log ratio; the parts add up to it), so an untraced loss is placed in the calls that drafted or
in those that did not.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/paired_pool.py LOG [LOG ...] --engine confidence \
        --against none-again [--concurrency 8 32 64 128 256] [--drop-every 0 3 ...] [--by-log] [--quantiles] \
        [--split-drafted]
"""

from __future__ import annotations

import argparse
import ast
import math
import random
import re
import statistics
from pathlib import Path

ROW = re.compile(r"^(\d+) (\S+) \{.*paired rounds (\[[^\]]*\])\s*$")
DRAFTS = re.compile(r"call drafts (\[[^\]]*\]) call dspark (\[[^\]]*\]) paired rounds")


def _rows(path: Path, drop_every: int):
    """(line number, line, `ROW` match) of each benchmark row of `path`, once `drop_every` is
    checked (ValueError: < 0 or 1)."""
    if drop_every < 0 or drop_every == 1:
        raise ValueError(f"drop_every: must be 0 (keep all) or >= 2 (1 drops every round), got {drop_every}")
    for number, line in enumerate(path.read_text().splitlines(), 1):
        m = ROW.match(line)
        if m:
            yield number, line, m


def read_rounds(path: Path, drop_every: int = 0) -> dict[tuple[int, str], list[float]]:
    """(concurrency, engine) -> the paired ratios (positive floats, engine over the log's first
    engine) of the rounds kept, in round order; a cell can be left empty by `drop_every`.

    Raises:
        ValueError: `drop_every` < 0 or 1; a row whose list is not positive numbers, or a second
            row of the same (concurrency, engine) (e.g. two processes' logs concatenated: pass
            them as two logs); no `paired rounds` row at all. Each names the path (and line).
    """
    rounds = {}
    for number, line, m in _rows(path, drop_every):
        key = (int(m[1]), m[2])
        try:
            ratios = [float(x) for x in ast.literal_eval(m[3])]
        except (ValueError, SyntaxError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: paired rounds: not a list of numbers ({exc})") from None
        if any(not 0 < x < math.inf for x in ratios):
            raise ValueError(f"{path}:{number}: paired rounds: every ratio must be positive and finite")
        if key in rounds:
            raise ValueError(f"{path}:{number}: a second row for {key[0]} requests, engine {key[1]!r} "
                             "(logs of two processes concatenated? pass them as two logs)")
        rounds[key] = [x for r, x in enumerate(ratios) if not drop_every or r % drop_every]
    if not rounds:
        raise ValueError(f"{path}: no `paired rounds` rows (a bench_dspark.py log from session 55 on?)")
    return rounds


def read_drafts(path: Path, drop_every: int = 0) -> dict[tuple[int, str], list[tuple[int, int]]]:
    """(concurrency, engine) -> each kept round's (call drafts, call dspark): the verification steps
    of the engine's call in that round (prompt-lookup rounds included) and the DSpark rounds in it
    (`paired_calls`' `call drafts [...] call dspark [...]`, ints >= 0), rounds kept as `read_rounds`
    keeps them.

    Raises:
        ValueError: `drop_every` < 0 or 1; a row without them (a log from before session 78), with a
            list that is not ints >= 0, or with two lists of different lengths; a second row of the
            same (concurrency, engine); no row at all. Each names the path (and line).
    """
    drafts = {}
    for number, line, m in _rows(path, drop_every):
        found = DRAFTS.search(line)
        if found is None:
            raise ValueError(f"{path}:{number}: no `call drafts ... call dspark` (a bench_dspark.py log from "
                             "session 78 on?)")
        try:
            lists = [ast.literal_eval(found[1]), ast.literal_eval(found[2])]
        except (ValueError, SyntaxError) as exc:
            raise ValueError(f"{path}:{number}: call drafts: not a list of integers ({exc})") from None
        if any(not isinstance(x, int) or isinstance(x, bool) or x < 0 for counts in lists for x in counts):
            raise ValueError(f"{path}:{number}: call drafts, call dspark: every count must be an integer >= 0")
        if len(lists[0]) != len(lists[1]):
            raise ValueError(f"{path}:{number}: call drafts and call dspark: lists of different lengths")
        key = (int(m[1]), m[2])
        if key in drafts:
            raise ValueError(f"{path}:{number}: a second row for {key[0]} requests, engine {key[1]!r}")
        drafts[key] = [x for r, x in enumerate(zip(*lists)) if not drop_every or r % drop_every]
    if not drafts:
        raise ValueError(f"{path}: no `paired rounds` rows")
    return drafts


def read_build_order(path: Path) -> list[str] | None:
    """The engines in the order the log's process built them (`bench_dspark.py`'s `built in order:`
    line, from session 84 on: `--build-rotate`), or None for a log without it."""
    for line in path.read_text().splitlines():
        if line.startswith("built in order: "):
            return line.removeprefix("built in order: ").split(", ")
    return None


SPLIT = ("dspark", "lookup only", "plain")


def split_drafted(cells: list[dict], drafts: list[dict], engine: str, against: str,
                  concurrency: list[int] | None) -> dict[str, list[float]]:
    """`engine`/`against` round ratios pooled over the logs' cells (as `pooled`), split by what
    `engine`'s call of the round did: {"dspark": drafted a DSpark round, "lookup only": verified
    prompt-lookup drafts alone, "plain": verified none}. `cells` from `read_rounds`, `drafts` from
    `read_drafts`, one per log, with the same `drop_every`.

    Raises:
        ValueError: `engine` equals `against`; `cells` and `drafts` of different lengths; a cell's
            drafts not one per kept round of its ratios.
    """
    if engine == against:
        raise ValueError(f"--against: must differ from --engine ({engine!r})")
    if len(cells) != len(drafts):
        raise ValueError(f"{len(cells)} logs of rounds against {len(drafts)} of call drafts")
    out = {kind: [] for kind in SPLIT}
    for rounds, counts in zip(cells, drafts):
        for (c, name), values in rounds.items():
            if name != engine or (concurrency and c not in concurrency) or (c, against) not in rounds:
                continue
            mine = counts.get((c, name), [])
            if len(mine) != len(values):
                raise ValueError(f"{c} requests, {engine!r}: {len(mine)} call drafts for {len(values)} rounds")
            for (verified, dspark), a, b in zip(mine, values, rounds[(c, against)]):
                out[SPLIT[0] if dspark else SPLIT[1] if verified else SPLIT[2]].append(a / b)
    return out


def geomean(values: list[float]) -> float:
    """exp(mean(log x)). Raises ValueError on an empty list or a value <= 0."""
    if not values or min(values) <= 0:
        raise ValueError(f"geomean: needs positive values, got {values[:5]}")
    return math.exp(statistics.fmean(math.log(x) for x in values))


def bootstrap(values: list[float], draws: int = 20000, seed: int = 0) -> tuple[float, float]:
    """The 2.5 and 97.5 percentiles of `draws` geometric means of `values` resampled with
    replacement (Efron's percentile interval). Raises ValueError on an empty list or a value <= 0."""
    geomean(values)   # (the same checks)
    rng = random.Random(seed)
    logs = [math.log(x) for x in values]
    means = sorted(statistics.fmean(rng.choices(logs, k=len(logs))) for _ in range(draws))
    return math.exp(means[int(0.025 * draws)]), math.exp(means[int(0.975 * draws) - 1])


QUANTILES = (0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95)


def quantiles(values: list[float], at: tuple[float, ...] = QUANTILES) -> list[float]:
    """The nearest-rank quantiles of `values` at each fraction of `at` (the value of rank
    ceil(q * n), 1-based; at least the first). Raises ValueError on an empty list or a fraction
    outside (0, 1]."""
    if not values:
        raise ValueError("quantiles: needs at least one value")
    if any(not 0 < q <= 1 for q in at):
        raise ValueError(f"quantiles: fractions must be in (0, 1], got {at}")
    ordered = sorted(values)
    return [ordered[max(math.ceil(q * len(ordered)), 1) - 1] for q in at]


# Student t 0.975 quantiles by degrees of freedom (a standard table; 1.96 beyond 30).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048,
        29: 2.045, 30: 2.042}


def across_logs(means: list[float]) -> tuple[float, float, float, int]:
    """The logs' A/B geometric means taken as the sample: (their geometric mean, the low and high
    ends of its Student t 95% interval on the log scale, how many are below 1).

    Raises:
        ValueError: fewer than two means, or one <= 0.
    """
    if len(means) < 2:
        raise ValueError(f"across_logs: needs two logs or more with the cell, got {len(means)}")
    geomean(means)   # (the same checks)
    logs = [math.log(x) for x in means]
    centre, spread = statistics.fmean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    half = T975.get(len(logs) - 1, 1.96) * spread
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half), sum(x < 1 for x in means)


def pooled(cells: list[dict], engine: str, against: str, concurrency: list[int] | None) -> dict[str, list[float]]:
    """Per-round ratios pooled over the logs' cells: `engine` and `against` over the first engine,
    and `engine` over `against`, round by round. Cells missing either engine are skipped.

    Raises:
        ValueError: `engine` equals `against`, or a cell holds fewer rounds of one than of the
            other (the rounds could not be paired).
    """
    if engine == against:
        raise ValueError(f"--against: must differ from --engine ({engine!r})")
    out = {engine: [], against: [], f"{engine}/{against}": []}
    for rounds in cells:
        for (c, name), values in rounds.items():
            if name != engine or (concurrency and c not in concurrency) or (c, against) not in rounds:
                continue
            other = rounds[(c, against)]
            if len(other) != len(values):
                raise ValueError(f"{c} requests: {len(values)} rounds of {engine!r} against {len(other)} of "
                                 f"{against!r}: not paired")
            out[engine] += values
            out[against] += other
            out[f"{engine}/{against}"] += [a / b for a, b in zip(values, other)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path, help="bench_dspark.py logs (bench_batch.log)")
    parser.add_argument("--engine", default="confidence")
    parser.add_argument("--against", default="none-again", help="the engine A is read against, round by round")
    parser.add_argument("--concurrency", type=int, nargs="*", default=None, help="pooled cells (default: all)")
    parser.add_argument("--drop-every", type=int, nargs="+", default=[0], metavar="M",
                        help="drop rounds r with r %% M == 0 (the step log's traced rounds): one M for every "
                             "log or one per log; 0 keeps all")
    parser.add_argument("--by-log", action="store_true",
                        help="also each log's A/B and a t interval across the logs (the processes)")
    parser.add_argument("--quantiles", action="store_true",
                        help="also the pooled rounds' quantiles of each ratio (the lower tail against the floor's)")
    parser.add_argument("--split-drafted", action="store_true",
                        help="also the A/B rounds split by whether A's call drafted (logs from session 78 on)")
    args = parser.parse_args()
    drops = args.drop_every * len(args.logs) if len(args.drop_every) == 1 else args.drop_every
    if len(drops) != len(args.logs):
        parser.error(f"--drop-every: one value or one per log ({len(args.logs)}), got {len(args.drop_every)}")
    try:
        cells = [read_rounds(p, m) for p, m in zip(args.logs, drops)]
        pool = pooled(cells, args.engine, args.against, args.concurrency)
        split = split_drafted(cells, [read_drafts(p, m) for p, m in zip(args.logs, drops)], args.engine,
                              args.against, args.concurrency) if args.split_drafted else None
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    print("| log | requests | engine | rounds | geometric mean | median |")
    print("|---|---:|---|---:|---:|---:|")
    for path, rounds in zip(args.logs, cells):
        name = "/".join(path.parts[-3:-1])   # e.g. run18/out-h100
        for (c, engine), values in sorted(rounds.items()):
            stats = f"{geomean(values):.3f} | {statistics.median(values):.3f}" if values else "- | -"
            print(f"| {name} | {c} | {engine} | {len(values)} | {stats} |")
    if not pool[args.engine]:
        raise SystemExit(f"--engine {args.engine} / --against {args.against}: no cell holds both with rounds left")
    print(f"\nPooled ({len(pool[args.engine])} rounds): geometric mean (95% bootstrap interval)")
    for name, values in pool.items():
        low, high = bootstrap(values)
        print(f"- {name}: {geomean(values):.3f} ({low:.3f}-{high:.3f})")
    if args.quantiles:
        print("\n| ratio | " + " | ".join(f"{q:.0%}" for q in QUANTILES) + " |")
        print("|---|" + "---:|" * len(QUANTILES))
        for name, values in pool.items():
            print(f"| {name} | " + " | ".join(f"{x:.3f}" for x in quantiles(values)) + " |")
    if split is not None:
        total = sum(map(len, split.values()))
        print(f"\n| {args.engine}'s call | rounds | share | {args.engine}/{args.against} (95% bootstrap) | "
              "part of the pooled log mean |\n|---|---:|---:|---:|---:|")
        for kind, values in split.items():
            if not values:
                print(f"| {kind} | 0 | 0.000 | - | - |")
                continue
            low, high = bootstrap(values)
            part = sum(math.log(x) for x in values) / total
            print(f"| {kind} | {len(values)} | {len(values) / total:.3f} | {geomean(values):.3f} "
                  f"({low:.3f}-{high:.3f}) | {part:+.4f} |")
    if args.by_log:
        ratio, means = f"{args.engine}/{args.against}", []
        for path, rounds in zip(args.logs, cells):
            values = pooled([rounds], args.engine, args.against, args.concurrency)[ratio]
            if values:
                means.append(geomean(values))
                order = read_build_order(path)
                built = "" if order is None else "; built " + " ".join(
                    f"{name}#{order.index(name) + 1}" for name in (args.engine, args.against) if name in order)
                print(f"- {'/'.join(path.parts[-3:-1])}: {ratio} {means[-1]:.3f} ({len(values)} rounds{built})")
        if len(means) >= 2:
            centre, low, high, below = across_logs(means)
            print(f"Across {len(means)} logs: {ratio} {centre:.3f} (t 95% {low:.3f}-{high:.3f}), "
                  f"{below} of {len(means)} below 1")


if __name__ == "__main__":
    main()
