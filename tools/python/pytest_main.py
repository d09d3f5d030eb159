# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Entry point of every py_pytest target: runs pytest on the files passed as arguments.

Bazel runs a test with the runfiles tree of the workspace as its working directory. The
root pyproject.toml (pytest settings) and conftest.py are in that tree, so the run behaves
like `pytest <file>` from the repository root. Results go to $XML_OUTPUT_FILE as JUnit XML,
which tools/test_summary.py counts.
"""

from __future__ import annotations

import os
import sys


def pytest_args(argv: list[str], environ: dict[str, str]) -> list[str]:
    """Return pytest's argument list for the test files in `argv`.

    Args:
        argv: the test file paths (relative to the runfiles workspace root) and any extra
            pytest flags.
        environ: the test environment (Bazel sets XML_OUTPUT_FILE and TEST_TARGET).
    """
    # importlib: tests/ folders have no __init__.py and file names repeat across packages.
    # no:cacheprovider: the runfiles tree is read-only.
    args = ["-c", "pyproject.toml", "--rootdir", ".", "--import-mode=importlib",
            "-p", "no:cacheprovider", "-q"]
    if "XML_OUTPUT_FILE" in environ:
        args.append("--junitxml=" + environ["XML_OUTPUT_FILE"])
    if "TEST_TARGET" in environ:
        args += ["-o", "junit_suite_name=" + environ["TEST_TARGET"]]
    return args + argv


def main() -> int:
    """Run pytest and return its exit code."""
    # Bazel leaves HOME unset and the real home is read-only in the sandbox: tools that write
    # under ~ (caches, configs) get the test's private temp folder instead.
    if "TEST_TMPDIR" in os.environ:
        os.environ.setdefault("HOME", os.environ["TEST_TMPDIR"])
    import pytest  # after sys.path is final (Bazel's stub set PYTHONPATH)

    return int(pytest.main(pytest_args(sys.argv[1:], dict(os.environ))))


if __name__ == "__main__":
    sys.exit(main())
