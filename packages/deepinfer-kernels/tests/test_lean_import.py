# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Importing the package (and running an op on the CPU) imports no triton, touches no GPU."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys
import torch
import deepinfer_kernels
from deepinfer_kernels import ops
after_import = sorted(m for m in sys.modules if m.split('.')[0] in ('triton', 'torch_npu'))
cuda_after_import = torch.cuda.is_initialized()
x = torch.randn(3, 8)
ops.rms_norm(x, torch.ones(8), 1e-6)
print(json.dumps({"modules": after_import, "cuda": cuda_after_import,
                  "cuda_after_op": torch.cuda.is_initialized(),
                  "extensions": sorted(m for m in sys.modules if m.startswith('deepinfer_kernels')
                                       and m.endswith('_ext'))}))
"""


def test_import_is_lean():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120, check=True)
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["modules"] == []
    assert report["cuda"] is False
    assert report["cuda_after_op"] is False
    assert report["extensions"] == []
