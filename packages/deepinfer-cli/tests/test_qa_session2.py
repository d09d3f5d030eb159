# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""QA regressions (session 2): a bad `bench latency --copy-bytes` value is reported against
`--copy-bytes` (the size parser used to name `--kv-cache-memory` whatever the flag)."""

from __future__ import annotations

import pytest

from deepinfer_cli.__main__ import build_parser


@pytest.mark.parametrize("flag", ["--copy-bytes", "--kv-cache-memory"])
def test_bad_size_names_its_own_flag(flag, capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "latency", flag, "12XB"])
    err = capsys.readouterr().err
    other = "--kv-cache-memory" if flag == "--copy-bytes" else "--copy-bytes"
    assert f"argument {flag}" in err and "12XB" in err and other not in err.split("error:")[-1], err
