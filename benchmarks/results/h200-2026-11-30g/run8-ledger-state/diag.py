"""Session 10, call 8: the confidence proposer's state after chat batches of 8 (call 7's drafter)."""
import os, sys
from deepinfer_core import LLM, SamplingParams
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.train.data import build_prompts, stdlib_docstrings
R = "benchmarks/results/h200-2026-11-30g/run7-realized-ratio/"
T = os.path.expanduser("~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf")
spec = {"method": "dspark", "model": os.path.expanduser("~/drafter_real"), "num_speculative_tokens": 7,
        "scheduling": "confidence", "sps_profile": SPSProfile.load(R + "spec_sps.json"), "decode_profile": SPSProfile.load(R + "sps.json")}
llm = LLM(T, speculative_config=spec, kv_cache_memory=8 << 30, max_num_seqs=8)
p = llm.engine.speculative.proposer
pool = [[{"role": "user", "content": q}] for q in build_prompts(stdlib_docstrings(8, seed=12345))]
calls = {"n": 0, "batches": {}}
orig = p.runner.draft
def draft(reqs, k):
    calls["n"] += 1; calls["batches"][len(reqs)] = calls["batches"].get(len(reqs), 0) + 1
    return orig(reqs, k)
p.runner.draft = draft
for run in range(4):
    outs = llm.chat(pool, SamplingParams(temperature=0, max_tokens=128))
    print("run", run, "tokens", sum(len(o.outputs[0].token_ids) for o in outs), "drafts", calls["n"], dict(sorted(calls["batches"].items())),
          "skipped", p.skipped_rounds, flush=True)
print("gain", {b: (round(g, 3), n) for b, (g, n) in p.pauses._gain.items()})
print("backoff", p.pauses._backoff, "left", p.pauses._left)
print("ratio", {b: (round(m.predicted, 3), round(m.realized, 3), m.rounds) for b, m in p.acceptance._buckets.items()})
print("stats", llm.engine.speculative.stats)
llm.close()
