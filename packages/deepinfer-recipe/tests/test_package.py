# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Package-level invariants of deepinfer-recipe: its public names and its installed metadata."""

from __future__ import annotations

import importlib
import importlib.metadata
from pathlib import Path

DISTRIBUTION = "deepinfer-recipe"
MODULE = "deepinfer_recipe"


def test_all_names_resolve():
    module = importlib.import_module(MODULE)
    names = list(module.__all__)
    assert len(names) == len(set(names)), f"duplicate names in {MODULE}.__all__"
    missing = [name for name in names if not hasattr(module, name)]
    assert not missing, f"{MODULE}.__all__ names missing attributes: {missing}"


def test_installed_version_matches_version_file():
    # The installed metadata comes from pip + the build backend; a mismatch means the editable
    # install is stale (rerun tools/setup.sh).
    version = (Path(__file__).parents[1] / "VERSION").read_text().strip()
    assert importlib.metadata.version(DISTRIBUTION) == version
