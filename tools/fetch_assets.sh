#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
#
# Prefetches test assets (real model weights, tokenizers) into $DEEPINFER_CACHE before
# `bazel test`, so tests only read them. Each hook is a Python module run as
# `python -m <module>`; a hook whose module does not exist (yet) is skipped. Add hooks to HOOKS.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
export DEEPINFER_CACHE="${DEEPINFER_CACHE:-$HOME/.cache/deepinfer}"  # same default as setup.sh and deepinfer_core.assets

HOOKS=(deepinfer_core.assets deepinfer_recipe.assets)

for module in "${HOOKS[@]}"; do
  # Exit 0: the module exists; 3: it does not; anything else: importing its parent failed.
  status=0
  "$PY" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)" \
    "$module" || status=$?
  if [[ $status == 3 ]]; then
    continue
  fi
  if [[ $status != 0 ]]; then
    echo "fetch_assets: cannot locate $module (exit $status)" >&2
    exit "$status"
  fi
  echo "fetch_assets: $module -> $DEEPINFER_CACHE" >&2
  # -W: the package imports its own assets module, which runpy (`-m`) would otherwise warn about.
  "$PY" -W "ignore::RuntimeWarning:runpy" -m "$module"
done
