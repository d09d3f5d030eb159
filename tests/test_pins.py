# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Sibling version pins: each package names its siblings with a range, and every sibling's
current VERSION falls inside every range that names it (docs/design.md: "sibling pins as
ranges"). Version semantics come from `packaging` (PEP 440), not from our own parser.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).parents[1]  # not resolved: under Bazel this is the runfiles tree
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").is_file())

_LOWER, _UPPER, _EXACT = {">=", ">", "~="}, {"<", "<=", "~="}, {"==", "==="}


def pin_errors(requirement: str, versions: dict[str, str]) -> list[str]:
    """Problems with one dependency string, if it names a sibling.

    Args:
        requirement: a PEP 508 string from pyproject, e.g. "deepinfer-core>=0.1,<0.2".
        versions: sibling distribution name -> its VERSION.

    Returns:
        Empty when the requirement is not a sibling, or is a bounded range containing the
        sibling's version; else one message per problem.
    """
    req = Requirement(requirement)
    name = canonicalize_name(req.name)
    if name not in versions:
        return []
    operators = {spec.operator for spec in req.specifier}
    errors = []
    if operators & _EXACT:
        errors.append(f"{requirement}: pinned exactly; use a range such as >=0.1,<0.2")
    if not operators & _LOWER or not operators & _UPPER:
        errors.append(f"{requirement}: needs both a lower and an upper bound")
    if not req.specifier.contains(versions[name], prereleases=True):
        errors.append(f"{requirement}: excludes the current {name} {versions[name]}")
    return errors


def sibling_versions() -> dict[str, str]:
    return {name: (ROOT / "packages" / name / "VERSION").read_text().strip() for name in PACKAGES}


@pytest.mark.parametrize("package", PACKAGES)
def test_version_file_is_pep440(package):
    Version((ROOT / "packages" / package / "VERSION").read_text().strip())


@pytest.mark.parametrize("package", PACKAGES)
def test_sibling_pins_are_ranges_containing_current_versions(package):
    project = tomllib.loads((ROOT / "packages" / package / "pyproject.toml").read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    versions = sibling_versions()
    errors = [e for r in requirements for e in pin_errors(r, versions)]
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize(
    "requirement",
    [
        "deepinfer-core==0.1.0",  # exact
        "deepinfer-core>=0.1",  # no upper bound
        "deepinfer-core<0.2",  # no lower bound
        "deepinfer-core",  # unbounded
        "deepinfer_core>=0.2,<0.3",  # excludes 0.1.0 (name spelled with "_")
    ],
)
def test_pin_checker_rejects(requirement):
    assert pin_errors(requirement, {"deepinfer-core": "0.1.0"})


@pytest.mark.parametrize(
    "requirement", ["deepinfer-core>=0.1,<0.2", "deepinfer-core~=0.1.0", "torch==2.13.0", "numpy"]
)
def test_pin_checker_accepts(requirement):
    assert pin_errors(requirement, {"deepinfer-core": "0.1.0"}) == []
