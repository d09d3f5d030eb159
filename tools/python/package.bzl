# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""deepinfer_python_package: the targets every packages/<distribution>/BUILD.bazel declares.

For packages/deepinfer-core, `deepinfer_python_package(name = "deepinfer_core", deps = [...])`
emits:
  :deepinfer_core   py_library over src/ (imports = ["src"]), package data included
  :metadata         pyproject.toml + VERSION, read by the root contract tests
  :test_<file>      one pytest target per tests/**/test_*.py (see py_pytest_files)
  :wheel            the distribution's wheel, manual (see py_wheel_genrule)
"""

load("//tools/python:defs.bzl", "py_pytest_files", "py_wheel_genrule")

def deepinfer_python_package(
        name,
        deps = [],
        data = [],
        test_data = [],
        test_sizes = {},
        wheel_srcs = [],
        wheel_tag = "py3-none-any"):
    """The library, metadata, test and wheel targets of one package.

    Args:
      name: the import name, e.g. "deepinfer_core"; also the py_library's name. The
        distribution ("deepinfer-core") must be the name of the package's folder.
      deps: py_library targets the library imports (sibling packages).
      data: extra runtime files of the library beyond src/** (e.g. a compiled extension).
      test_data: extra runtime files of the tests beyond :metadata and tests/**.
      test_sizes: per-file test size override, e.g. {"tests/test_wheel.py": "large"}.
      wheel_srcs: extra wheel inputs beyond pyproject.toml, VERSION, README.md and src/**.
      wheel_tag: the wheel's compatibility tag (an extension: "cp311-cp311-linux_x86_64").
    """
    distribution = name.replace("_", "-")
    if native.package_name().split("/")[-1] != distribution:
        fail("deepinfer_python_package: %s must be declared in packages/%s" % (name, distribution))

    native.py_library(
        name = name,
        srcs = native.glob(["src/**/*.py"]),
        # Package data (templates, py.typed, ...): everything else under src/.
        data = native.glob(
            ["src/**"],
            exclude = ["src/**/*.py", "**/__pycache__/**", "**/*.pyc", "**/*.so"],
        ) + data,
        imports = ["src"],
        visibility = ["//visibility:public"],
        deps = deps,
    )

    # Read by the root contract tests (//:test_pins, //:test_import_contracts, ...).
    native.filegroup(
        name = "metadata",
        srcs = ["pyproject.toml", "VERSION"],
        visibility = ["//visibility:public"],
    )

    py_pytest_files(
        srcs = native.glob(["tests/**/test_*.py"]),
        data = [":metadata"] + test_data,
        sizes = test_sizes,
        deps = [":" + name],
    )

    # bazel build //packages/<distribution>:wheel
    py_wheel_genrule(
        name = "wheel",
        distribution = distribution,
        srcs = wheel_srcs,
        tag = wheel_tag,
    )
