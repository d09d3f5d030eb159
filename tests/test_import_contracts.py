# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Import boundaries between the five packages (docs/structures.md, "Packages").

A module of package X may import a sibling package Y only if
  * the dependency direction allows it (kernels, recipe: no sibling; core: kernels, recipe;
    dspark: core, kernels; cli: all), and
  * it goes through Y's public surface: `import Y`, names in Y's top-level `__all__`, or
    a published module (`deepinfer_core.interfaces`, `deepinfer_kernels.ops`).
Every sibling a package imports must also be declared in its pyproject dependencies.
The checker reads sources with `ast` (nothing is imported); relative imports stay inside
their own package and are always allowed.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parents[1]  # not resolved: under Bazel this is the runfiles tree

ALLOWED_SIBLINGS = {
    "deepinfer_kernels": set(),
    "deepinfer_recipe": set(),
    "deepinfer_core": {"deepinfer_kernels", "deepinfer_recipe"},
    "deepinfer_dspark": {"deepinfer_core", "deepinfer_kernels"},
    "deepinfer_cli": {"deepinfer_core", "deepinfer_dspark", "deepinfer_kernels", "deepinfer_recipe"},
}
PUBLIC_MODULES = {"deepinfer_core.interfaces", "deepinfer_kernels.ops"}
_IMPORT_CALLS = {"import_module", "__import__"}  # importlib.import_module("..."), __import__("...")


def package_dir(package: str) -> Path:
    """packages/deepinfer-core for "deepinfer_core"."""
    return ROOT / "packages" / package.replace("_", "-")


def static_all(init_source: str) -> set[str] | None:
    """The names in a module's `__all__` if it is built from string literals only, else None."""
    names: set[str] = set()
    found = False
    for node in ast.parse(init_source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        value = getattr(node, "value", None)
        if not isinstance(value, (ast.List, ast.Tuple)):
            return None
        if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
            return None
        names |= {e.value for e in value.elts}
        found = True
    return names if found else None


def imported_modules(tree: ast.AST) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) for every absolute import in `tree`.

    `import a.b` gives ("a.b", []); `from a import b, c` gives ("a", ["b", "c"]); a call
    `importlib.import_module("a.b")` with a literal argument gives ("a.b", []).
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _IMPORT_CALLS and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value, []))
    return found


def check_source(package: str, source: str, filename: str, public: dict[str, set[str]]) -> list[str]:
    """Violations of the import contract in one module of `package`.

    Args:
        package: the importing package, e.g. "deepinfer_core".
        source: the module's Python source.
        filename: used in messages only.
        public: sibling package -> the names of its top-level `__all__`.

    Returns:
        One "file:line: message" string per violation.
    """
    errors = []
    for line, module, names in imported_modules(ast.parse(source, filename)):
        top = module.split(".")[0]
        if top not in ALLOWED_SIBLINGS or top == package:
            continue
        where = f"{filename}:{line}"
        if top not in ALLOWED_SIBLINGS[package]:
            errors.append(f"{where}: {package} must not import {top} (dependency direction)")
        elif module == top:
            hidden = [n for n in names if n != "*" and n not in public.get(top, set())
                      and f"{top}.{n}" not in PUBLIC_MODULES]
            if hidden:
                errors.append(f"{where}: {hidden} not in {top}.__all__")
        elif module in PUBLIC_MODULES:
            private = [n for n in names if n.startswith("_")]
            if private:
                errors.append(f"{where}: private names {private} from {module}")
        else:
            errors.append(f"{where}: {module} is private to {top}; use its __all__ or {sorted(PUBLIC_MODULES)}")
    return errors


def public_names() -> dict[str, set[str]]:
    """Each package's top-level `__all__` (empty when not a static literal)."""
    names = {}
    for package in ALLOWED_SIBLINGS:
        init = package_dir(package) / "src" / package / "__init__.py"
        names[package] = static_all(init.read_text()) or set()
    return names


def package_sources(package: str) -> list[Path]:
    return sorted((package_dir(package) / "src" / package).rglob("*.py"))


def declared_siblings(package: str) -> set[str]:
    """Sibling import names among `package`'s pyproject dependencies (all extras included)."""
    project = tomllib.loads((package_dir(package) / "pyproject.toml").read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    names = {canonicalize_name(Requirement(r).name).replace("-", "_") for r in requirements}
    return names & set(ALLOWED_SIBLINGS)


@pytest.mark.parametrize("package", sorted(ALLOWED_SIBLINGS))
def test_package_sources_respect_contracts(package):
    public = public_names()
    errors = []
    for path in package_sources(package):
        errors += check_source(package, path.read_text(), str(path.relative_to(ROOT)), public)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("package", sorted(ALLOWED_SIBLINGS))
def test_all_is_a_static_list(package):
    init = package_dir(package) / "src" / package / "__init__.py"
    assert static_all(init.read_text()) is not None, f"{init}: __all__ must be a literal list of str"


@pytest.mark.parametrize("package", sorted(ALLOWED_SIBLINGS))
def test_imported_siblings_are_declared_and_allowed(package):
    imported = set()
    for path in package_sources(package):
        imported |= {m.split(".")[0] for _, m, _ in imported_modules(ast.parse(path.read_text()))}
    imported &= set(ALLOWED_SIBLINGS) - {package}
    declared = declared_siblings(package)
    assert imported <= declared, f"{package} imports undeclared siblings {sorted(imported - declared)}"
    assert declared <= ALLOWED_SIBLINGS[package], f"{package} declares {sorted(declared)}"


_PUBLIC = {"deepinfer_core": {"LLM"}, "deepinfer_kernels": {"ops"}}


@pytest.mark.parametrize(
    ("package", "source"),
    [
        ("deepinfer_core", "from deepinfer_kernels._registry import register"),
        ("deepinfer_core", "import deepinfer_kernels.backends.reference"),
        ("deepinfer_core", "from deepinfer_kernels import _registry"),
        ("deepinfer_core", "from deepinfer_kernels.ops import _helper"),
        ("deepinfer_core", "import importlib\nimportlib.import_module('deepinfer_kernels._registry')"),
        ("deepinfer_core", "from deepinfer_dspark import Proposer"),
        ("deepinfer_kernels", "import deepinfer_core"),
        ("deepinfer_recipe", "from deepinfer_core import LLM"),
        ("deepinfer_dspark", "from deepinfer_core.engine.scheduler import Scheduler"),
        ("deepinfer_cli", "from deepinfer_core import Scheduler"),
        ("deepinfer_cli", "def f():\n    import deepinfer_kernels.ops.attention"),
    ],
)
def test_checker_catches_violation(package, source):
    assert check_source(package, source, "synthetic.py", _PUBLIC)


@pytest.mark.parametrize(
    ("package", "source"),
    [
        ("deepinfer_core", "import deepinfer_kernels\nfrom deepinfer_kernels import ops"),
        ("deepinfer_core", "import deepinfer_kernels.ops as ops\nfrom deepinfer_kernels.ops import rms_norm"),
        ("deepinfer_core", "from deepinfer_core.engine import scheduler\nfrom . import config\nimport torch"),
        ("deepinfer_dspark", "from deepinfer_core.interfaces import Proposer\nfrom deepinfer_core import LLM"),
        ("deepinfer_cli", "from deepinfer_core import *\nimport deepinfer_dspark"),
    ],
)
def test_checker_accepts_public_imports(package, source):
    assert check_source(package, source, "synthetic.py", _PUBLIC) == []


def test_static_all_reads_literals_only():
    assert static_all("__all__: list[str] = ['a']\n__all__ += ('b',)") == {"a", "b"}
    assert static_all("__all__ = [name for name in dir()]") is None
    assert static_all("x = 1") is None
