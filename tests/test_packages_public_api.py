# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Package-level invariants of every packages/<distribution>: its public names (`__all__`)
and its installed metadata (the version pip recorded matches the VERSION file).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]  # not resolved: under Bazel this is the runfiles tree
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").is_file())


def test_every_package_is_checked():
    # An empty list would make the parametrized tests below pass vacuously.
    assert len(PACKAGES) >= 5, f"found only {PACKAGES} under {ROOT / 'packages'}"


@pytest.mark.parametrize("distribution", PACKAGES)
def test_all_names_resolve(distribution):
    module_name = distribution.replace("-", "_")
    module = importlib.import_module(module_name)
    names = list(module.__all__)
    assert len(names) == len(set(names)), f"duplicate names in {module_name}.__all__"
    missing = [name for name in names if not hasattr(module, name)]
    assert not missing, f"{module_name}.__all__ names missing attributes: {missing}"


@pytest.mark.parametrize("distribution", PACKAGES)
def test_installed_version_matches_version_file(distribution):
    # The installed metadata comes from pip + the build backend; a mismatch means the editable
    # install is stale (rerun tools/setup.sh).
    version = (ROOT / "packages" / distribution / "VERSION").read_text().strip()
    assert importlib.metadata.version(distribution) == version
