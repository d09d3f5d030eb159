# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Summarise a pytest JUnit XML of the kernels suite as pass/fail counts per op and backend.

    python benchmarks/gpu_test_report.py results.xml   # prints a markdown table

Parametrised backend tests are named `test_matches_reference[<op>[<case>]-<dtype>-<backend>]`;
other tests are grouped under their file.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter


def key_of(case: ET.Element) -> tuple[str, str]:
    name = case.get("name", "")
    m = re.match(r"test_matches_reference\[(\w+)\[.*\]-(\w+)-(\w+)\]$", name)
    if m:
        return m.group(1), m.group(3)
    return case.get("classname", "").rsplit(".", 1)[-1], "-"


def main(path: str) -> None:
    counts: Counter = Counter()
    for case in ET.parse(path).iter("testcase"):
        kind = "passed"
        if case.find("failure") is not None or case.find("error") is not None:
            kind = "failed"
        elif case.find("skipped") is not None:
            kind = "skipped"
        counts[key_of(case) + (kind,)] += 1
    keys = sorted({k[:2] for k in counts})
    print("| op / test file | backend | passed | failed | skipped |\n|---|---|---|---|---|")
    for op, backend in keys:
        print(f"| {op} | {backend} | {counts[(op, backend, 'passed')]} | {counts[(op, backend, 'failed')]} "
              f"| {counts[(op, backend, 'skipped')]} |")


if __name__ == "__main__":
    main(sys.argv[1])
