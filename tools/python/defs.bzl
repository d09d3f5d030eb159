# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Bazel macros shared by every package BUILD: pytest targets and wheel genrules.

py_pytest_files(srcs)   one py_test per test FILE (parallel, cached per file), run by pytest
py_wheel_genrule()      the package's wheel via `pip wheel` (no rules_python in Bazel 4.2.3)
"""

load("@deepinfer_versions//:versions.bzl", "VERSIONS")

_PYTEST_MAIN = "//tools/python:pytest_main.py"

# Everything the root conftest/pytest config needs, present in every test's runfiles.
_PYTEST_CONFIG = ["//:pytest_config"]

def py_pytest(name, srcs, deps = [], data = [], args = [], **kwargs):
    """A py_test that runs pytest on `srcs` (see pytest_main.py for the fixed flags)."""
    native.py_test(
        name = name,
        srcs = srcs + [_PYTEST_MAIN],
        main = _PYTEST_MAIN,
        args = args + ["$(location %s)" % src for src in srcs],
        deps = deps,
        data = data + _PYTEST_CONFIG,
        python_version = "PY3",
        **kwargs
    )

def _target_name(src):
    # tests/test_foo.py -> test_foo; tests/unit/test_foo.py -> unit/test_foo. Never "tests":
    # a target named like the tests/ folder hides that folder in its runfiles.
    path = src[len("tests/"):] if src.startswith("tests/") else src
    return path[:-len(".py")]

def py_pytest_files(srcs, deps = [], data = [], size = "medium", sizes = {}, tags = [], **kwargs):
    """One py_test per file in `srcs`, named after the file.

    Args:
      srcs: test files, normally glob(["tests/test_*.py"]).
      deps: py_library targets under test.
      data: extra runtime files. Every non-test file under tests/ (conftest.py, fixtures
        data) is added automatically.
      size: default test size ("medium" = 300 s timeout).
      sizes: per-file override, e.g. {"tests/test_e2e.py": "large"}.
      tags: tags for every target.
      **kwargs: passed to py_test.

    Files named test_triton_*.py run with TRITON_INTERPRET=1 (triton on CPU; it must be set
    before triton is imported, hence a per-target env rather than a fixture) and tag "interp",
    and with OPENBLAS_CORETYPE=SandyBridge: the interpreter runs `tl.dot` through numpy, and
    OpenBLAS's Haswell sgemm kernel (which DYNAMIC_ARCH picked on an AMD EPYC CI machine) rounds
    a row differently by its position in the tile, so the batch-invariance tests failed there
    (2026-12-03) although the kernels were unchanged; SandyBridge's kernel (AVX, any x86-64 since
    2011) does not, checked there. Non-x86 OpenBLAS ignores the name.
    """
    helpers = native.glob(
        ["tests/**"],
        exclude = ["tests/**/test_*.py", "**/__pycache__/**", "**/*.pyc", "**/.ruff_cache/**"],
    )
    for src in srcs:
        name = _target_name(src)
        env = {}
        file_tags = list(tags)
        if name.split("/")[-1].startswith("test_triton_"):
            env["TRITON_INTERPRET"] = "1"
            env["OPENBLAS_CORETYPE"] = "SandyBridge"
            file_tags.append("interp")
        py_pytest(
            name = name,
            srcs = [src],
            deps = deps,
            data = data + helpers,
            size = sizes.get(src, size),
            env = env,
            tags = file_tags,
            **kwargs
        )

def py_wheel_genrule(name, distribution, srcs = [], tag = "py3-none-any", **kwargs):
    """The package's wheel, built by its own PEP 517 backend with the venv's pip.

    Tagged manual, so `bazel test //...` does not build it: `bazel build //packages/<pkg>:wheel`.

    Args:
      name: target name (conventionally "wheel").
      distribution: the distribution name, e.g. "deepinfer-core"; its version comes from
        packages/<distribution>/VERSION through @deepinfer_versions.
      srcs: extra inputs beyond pyproject.toml, VERSION, README.md and src/** (e.g. csrc/**).
      tag: the wheel's compatibility tag (an extension package: "cp311-cp311-linux_x86_64").
      **kwargs: passed to genrule.
    """
    version = VERSIONS[distribution]
    out = "%s-%s-%s.whl" % (distribution.replace("-", "_"), version, tag)
    inputs = native.glob(
        ["pyproject.toml", "VERSION", "README.md", "src/**"],
        exclude = ["**/__pycache__/**", "**/*.pyc", "**/*.so"],
    )

    # HOME and PIP_NO_CACHE_DIR: the sandbox cannot write the user's pip cache.
    # --no-build-isolation --no-index: the backend (hatchling, ...) comes from the venv, offline.
    native.genrule(
        name = name,
        srcs = inputs + srcs,
        outs = [out],
        tools = ["@local_python//:python"],
        cmd = ("PIP_NO_CACHE_DIR=1 HOME=$$PWD/_home $(location @local_python//:python) -m pip " +
               "wheel -q --no-deps --no-build-isolation --no-index -w $(@D) %s" % native.package_name()),
        tags = ["manual"],
        visibility = kwargs.pop("visibility", ["//visibility:public"]),
        **kwargs
    )
