# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Count individual pytest cases of one `bazel test` run and print `N passed, N failed`.

Bazel prints per-target results only, so tools/test.sh passes this script the run's Build
Event Protocol file (`--build_event_json_file`): its testResult events name each target's
test.xml (JUnit XML written by pytest, or by Bazel when the test crashed), which holds one
<testcase> per pytest case. Only this run's targets are counted, never stale bazel-testlogs.

Usage: python tools/test_summary.py [--bazel-exit RC] BEP_JSON_FILE
Exit status: 0 when nothing failed, else 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

_OK_STATUSES = {"PASSED", "FLAKY"}


@dataclass
class Counts:
    """Test case counts; `failed` includes errors."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0

    def add(self, other: Counts) -> None:
        """Add `other`'s counts to this one in place."""
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped

    def line(self) -> str:
        """The closing line, e.g. `12 passed, 0 failed, 1 skipped` (skipped only if any)."""
        text = f"{self.passed} passed, {self.failed} failed"
        return text + (f", {self.skipped} skipped" if self.skipped else "")


def count_junit(xml_text: str) -> Counts:
    """Count the <testcase> elements of one JUnit XML document.

    A case fails if it has a <failure> or <error> child, is skipped if it has <skipped>
    (pytest also reports xfail that way), and passes otherwise.

    Raises:
        xml.etree.ElementTree.ParseError: `xml_text` is not XML.
    """
    counts = Counts()
    for case in ET.fromstring(xml_text).iter("testcase"):
        children = {child.tag for child in case}
        if children & {"failure", "error"}:
            counts.failed += 1
        elif "skipped" in children:
            counts.skipped += 1
        else:
            counts.passed += 1
    return counts


def _read_xml(outputs: list[dict]) -> str | None:
    for output in outputs:
        if output.get("name") == "test.xml" and output.get("uri", "").startswith("file://"):
            path = Path(unquote(urlparse(output["uri"]).path))
            return path.read_text(errors="replace") if path.is_file() else None
    return None


def count_target(result: dict) -> Counts:
    """Counts for one testResult event payload (one target, one run/shard, last attempt).

    A target that did not pass but whose XML shows no failing case (crash before pytest,
    timeout, no test collected) counts as one failed case.
    """
    text = _read_xml(result.get("testActionOutput", []))
    try:
        counts = count_junit(text) if text is not None else Counts()
    except ET.ParseError:
        counts = Counts()
    if result.get("status", "NO_STATUS") not in _OK_STATUSES and counts.failed == 0:
        counts.failed = 1
    return counts


def summarize(bep_lines: list[str]) -> tuple[Counts, list[str]]:
    """Return (total counts, labels of failing targets) from BEP JSON lines.

    A test target that was requested but never produced a result (its build or analysis
    failed, with --keep_going) counts as one failed case.
    """
    results: dict[tuple, dict] = {}  # (label, run, shard) -> last attempt's payload
    expected: set[str] = set()  # test targets (configured as tests, or failed to configure)
    for line in bep_lines:
        if not line.strip():
            continue
        event = json.loads(line)
        ident = event.get("id", {})
        if "testResult" in ident and "testResult" in event:
            key = ident["testResult"]
            results[(key["label"], key.get("run"), key.get("shard"))] = event["testResult"]
        elif "targetConfigured" in ident:
            if "testSize" in event.get("configured", {}) or "aborted" in event:
                expected.add(ident["targetConfigured"]["label"])
    total, failing = Counts(), []
    for (label, _, _), result in sorted(results.items()):
        counts = count_target(result)
        total.add(counts)
        if counts.failed:
            failing.append(label)
    for label in sorted(expected - {key[0] for key in results}):
        total.failed += 1
        failing.append(label + " (did not run)")
    return total, failing


def main(argv: list[str] | None = None) -> int:
    """Print failing targets, then the closing line; return 1 if anything failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bep_json", type=Path)
    parser.add_argument("--bazel-exit", type=int, default=0, help="bazel's exit status")
    args = parser.parse_args(argv)
    lines = args.bep_json.read_text().splitlines() if args.bep_json.is_file() else []
    total, failing = summarize(lines)
    for label in failing:
        print(f"FAILED {label}")
    # bazel failed outside any test (e.g. a broken BUILD file): the closing line must say so.
    if args.bazel_exit != 0 and total.failed == 0:
        print(f"bazel exited with status {args.bazel_exit} (see above)")
        total.failed = 1
    print(total.line())
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main())
