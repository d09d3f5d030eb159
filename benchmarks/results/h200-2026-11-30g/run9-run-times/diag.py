"""Session 10, call 9: per-run wall time of none vs confidence at 8 chat requests (call 7's drafter),
and a cProfile of one confidence run (top 25 by cumulative time)."""
import cProfile, io, os, pstats, time
from deepinfer_core import LLM, SamplingParams
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.train.data import build_prompts, stdlib_docstrings
R = "benchmarks/results/h200-2026-11-30g/run7-realized-ratio/"
T = os.path.expanduser("~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf")
spec = {"method": "dspark", "model": os.path.expanduser("~/drafter_real"), "num_speculative_tokens": 7,
        "scheduling": "confidence", "sps_profile": SPSProfile.load(R + "spec_sps.json"), "decode_profile": SPSProfile.load(R + "sps.json")}
llms = {"none": LLM(T, kv_cache_memory=4 << 30, max_num_seqs=8),
        "confidence": LLM(T, speculative_config=spec, kv_cache_memory=4 << 30, max_num_seqs=8)}
pool = [[{"role": "user", "content": q}] for q in build_prompts(stdlib_docstrings(8, seed=12345))]
params = SamplingParams(temperature=0, max_tokens=128)
for run in range(5):
    for name, llm in llms.items():
        t = time.perf_counter(); llm.chat(pool, params); print(run, name, round((time.perf_counter() - t) * 1e3, 1), "ms", flush=True)
pr = cProfile.Profile(); pr.enable(); llms["confidence"].chat(pool, params); pr.disable()
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(25); print(s.getvalue()[-6000:])
