# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`deepinfer` command line: generate | bench."""

from __future__ import annotations

import argparse
import sys

from deepinfer_cli.commands import bench, generate


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with one sub-command per module in `commands/`."""
    parser = argparse.ArgumentParser(prog="deepinfer", description="DeepInfer offline LLM inference.")
    sub = parser.add_subparsers(dest="command", required=True)
    generate.add_parser(sub)
    bench.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `deepinfer` console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except ValueError as exc:  # bad user input: one clear line, no traceback
        print(f"deepinfer: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
