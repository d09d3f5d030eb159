#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
#
# The one test command (also CI's): setup, Bazel, assets, `bazel test`, then a closing line
# `N passed, N failed[, N skipped]` counting individual pytest cases. Exits non-zero if
# anything failed. Usage: tools/test.sh [bazel test arguments; default //...]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

tools/setup.sh
tools/install_bazel.sh
# A failed fetch is not fatal here: the tests that need the asset fail and say why.
tools/fetch_assets.sh || echo "test: asset prefetch failed; running the tests anyway" >&2

# Bazel's output base is keyed by the workspace path, so clones never share outputs.
export PYTHON_BIN_PATH="$ROOT/.venv/bin/python"
bep="$(mktemp)"
trap 'rm -f "$bep"' EXIT
bazel_exit=0
bazel test --build_event_json_file="$bep" "${@:-//...}" </dev/null || bazel_exit=$?
"$PYTHON_BIN_PATH" tools/test_summary.py --bazel-exit "$bazel_exit" "$bep"
