# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`measure_plain_steps` in the engine (both loops, with and without prompt lookup): on a fake
clock that advances only in the model runner, each step by exactly its decode profile's time at
its rows plus a cost per prefill token, every stretch sample must read 1.0: no prefill (a request
joining as another finishes, a second `generate` call's prompts) and no idle time lands in one
(session 33's review helper found both in the first version)."""

from __future__ import annotations

import pytest
from deepinfer_core import SamplingParams

from deepinfer_dspark.measured_rates import STRETCH
from deepinfer_dspark.sps import SPSProfile

SPS = SPSProfile([5, 10, 640], [300.0, 100.0, 50.0])     # pays at 1 request only (5 x 300 > 1000)
DECODE = SPSProfile([1, 64], [1000.0, 990.0])
PREFILL = 2e-4    # seconds per prompt token


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("lookup", [0, 2])
def test_stretch_samples_hold_plain_decode_steps_only(folders, kit, asynchronous, lookup) -> None:
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPS, "decode_profile": DECODE, "measure_plain_steps": True, "prompt_lookup_min": lookup}
    llm = kit.build(target, spec, async_scheduling=asynchronous, max_num_seqs=4)
    proposer = llm.engine.speculative.proposer
    inner = getattr(proposer, "inner", proposer)
    now = [0.0]
    inner.rates.clock = lambda: now[0]
    runner = llm.engine.runner
    execute = runner.execute_model

    def timed(chunks, *args, **kwargs):
        prefill = sum(len(c.token_ids) for c in chunks if len(c.token_ids) > 1)
        now[0] += 1.0 / DECODE.at(len(chunks)) + PREFILL * prefill
        return execute(chunks, *args, **kwargs)

    runner.execute_model = timed
    prompts = kit.prompts(12, seed=5)
    params = [SamplingParams(temperature=0, max_tokens=10 + 7 * i, ignore_eos=True) for i in range(12)]
    llm.generate([{"prompt_token_ids": p} for p in prompts], params)   # requests join as others finish
    now[0] += 5.0                                                        # an idle engine between calls
    llm.generate([{"prompt_token_ids": p} for p in prompts[:4]], params[:4])
    stretches = {key: list(window) for key, window in inner.rates.windows.items() if key[0] == STRETCH}
    # (with lookup, DSpark declares and hears its stretches whole, as without: `HeldStretch`)
    assert sum(inner.rates.samples.get(key, 0) for key in stretches) >= 1, stretches
    for key, window in stretches.items():
        assert all(v == pytest.approx(1.0) for v in window), (key, window)
    llm.close()
