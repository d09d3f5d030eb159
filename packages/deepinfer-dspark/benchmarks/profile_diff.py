# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Where two cProfiles of the same work differ: per function, calls and own time in each.

`bench_dspark.py --profile PATH` dumps each profiled run's raw statistics next to PATH
(`<stem>-<variant>-at-<C>.prof`). Given two of them (e.g. `none` and `confidence` at 128
requests), this lists the functions whose own time differs most, with their call counts, and
the functions only one side called: the host work one engine does per step that the other does
not (session 16 found declined steps +0.055 ms slower than `none`'s at 128 requests and could not
say why).

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/profile_diff.py A.prof B.prof [--top 25] [--steps N]

`--steps N` also prints the differences per step (N = the steps of one profiled run, e.g. from
the step log). Times in ms.
"""

from __future__ import annotations

import argparse
import pstats
from pathlib import Path


def load(path: Path) -> dict[str, tuple[int, float]]:
    """`file:line(function)` -> (primitive calls, own seconds), from a `dump_stats` file."""
    stats = pstats.Stats(str(path)).stats   # {(file, line, name): (cc, nc, tt, ct, callers)}
    return {f"{Path(f).name}:{line}({name})": (int(cc), float(tt)) for (f, line, name), (cc, _, tt, _, _)
            in stats.items()}


def differences(a: dict[str, tuple[int, float]], b: dict[str, tuple[int, float]]) -> list[tuple]:
    """Rows `(function, calls a, calls b, own ms a, own ms b)`, by |own time b - a|, largest first."""
    rows = []
    for key in set(a) | set(b):
        calls_a, time_a = a.get(key, (0, 0.0))
        calls_b, time_b = b.get(key, (0, 0.0))
        rows.append((key, calls_a, calls_b, 1e3 * time_a, 1e3 * time_b))
    return sorted(rows, key=lambda r: (-abs(r[4] - r[3]), r[0]))


def table(rows: list[tuple], top: int, steps: int | None, names: tuple[str, str]) -> list[str]:
    per = " | extra calls/step | extra us/step" if steps else ""
    out = [f"| function | calls {names[0]} | calls {names[1]} | own ms {names[0]} | own ms {names[1]} | "
           f"extra ms{per} |", "|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if steps else "")]
    for key, ca, cb, ta, tb in rows[:top]:
        line = f"| `{key}` | {ca} | {cb} | {ta:.2f} | {tb:.2f} | {tb - ta:+.2f} |"
        if steps:
            line += f" {(cb - ca) / steps:+.1f} | {1e3 * (tb - ta) / steps:+.1f} |"
        out.append(line)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="the reference profile (e.g. none)")
    parser.add_argument("b", type=Path, help="the other profile (e.g. confidence)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--steps", type=int, default=None, help="engine steps in one profiled run")
    args = parser.parse_args()
    if args.steps is not None and args.steps <= 0:
        parser.error("--steps: must be positive")
    a, b = load(args.a), load(args.b)
    total_a, total_b = sum(t for _, t in a.values()), sum(t for _, t in b.values())
    print(f"own time in all: {1e3 * total_a:.1f} ms ({args.a.name}), {1e3 * total_b:.1f} ms ({args.b.name}), "
          f"{1e3 * (total_b - total_a):+.1f} ms")
    print("\n".join(table(differences(a, b), args.top, args.steps, (args.a.stem, args.b.stem))))
    only = sorted(k for k in b if k not in a)
    print(f"\ncalled only in {args.b.name}: {len(only)} functions; only in {args.a.name}: "
          f"{sum(1 for k in a if k not in b)}")


if __name__ == "__main__":
    main()
