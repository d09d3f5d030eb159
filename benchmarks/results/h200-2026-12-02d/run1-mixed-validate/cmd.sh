# Session 27, call 1: the first half of the SmolLM2 GGUF onto the machine (call 2, issued at once,
# carries the second half), then mixed-step CUDA graphs (session 26, CPU-tested only) on the H200:
# (a) test_mixed_graph.py (its CUDA test: tokens of a graph engine = an eager engine's, fp32 and
# bf16, deterministic, chunked mixed steps); (b) the same check on SmolLM2's shape (random
# weights, 24 prompts of 20-600 tokens, a 256-token budget); (c) step_trace.py and
# `deepinfer bench latency` with and without --mixed-cuda-graphs (step kinds' median ms, TTFT).
# Carry: .cache/gpu_wheels .cache/gguf/part_aa .cache/smollm2_cfg
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh > $OUT/env.log 2>&1
export PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -q -rf --tb=short packages/deepinfer-core/tests/test_mixed_graph.py > $OUT/pytest.log 2>&1
echo "pytest rc $? at ${SECONDS} s"; tail -4 $OUT/pytest.log
S=.cache/smollm2_cfg
timeout 120 python3 - > $OUT/equal.log 2>&1 <<'PY'
import random, time
from deepinfer_core import LLM, SamplingParams
common = dict(model=".cache/smollm2_cfg", load_format="dummy", device="cuda", dtype="bfloat16", deterministic=True,
              max_model_len=1024, max_num_seqs=16, max_num_batched_tokens=256, kv_cache_memory=4 << 30)
t0 = time.perf_counter(); graphs = LLM(mixed_cuda_graphs=True, **common); t1 = time.perf_counter()
eager = LLM(**common); t2 = time.perf_counter()
print(f"start-up: mixed graphs {t1 - t0:.1f} s, without {t2 - t1:.1f} s")
rng = random.Random(0)
reqs = [{"prompt_token_ids": [rng.randrange(100, 49000) for _ in range(rng.randint(20, 600))]} for _ in range(24)]
p = SamplingParams(temperature=0, max_tokens=32, ignore_eos=True)
got = [o.outputs[0].token_ids for o in graphs.generate(reqs, p)]
want = [o.outputs[0].token_ids for o in eager.generate(reqs, p)]
print("equal", got == want, sum(a == b for a, b in zip(got, want)), "of", len(got),
      "replays", graphs.engine.runner.mixed_graphs.replays)
PY
echo "equal rc $? at ${SECONDS} s"; cat $OUT/equal.log | grep -v Warn | tail -4
for flag in "" --mixed-cuda-graphs; do
  timeout 100 python3 packages/deepinfer-core/benchmarks/step_trace.py --model $S --load-format dummy --dtype bfloat16 \
    --num-prompts 64 --input-len 64 320 --output-len 16 64 --max-num-seqs 64 --max-model-len 2048 \
    --kv-cache-memory 8GiB $flag > $OUT/trace$flag.log 2>&1
  echo "trace $flag rc $? at ${SECONDS} s"; grep -E "ready|graph|eager|outside|tok" $OUT/trace$flag.log | grep -v "^\[" | tail -8
done
for flag in "" --mixed-cuda-graphs; do
  timeout 90 deepinfer bench latency --model $S --load-format dummy --dtype bfloat16 --batch-sizes 1 8 --input-len 128 \
    --output-len 128 --max-model-len 2048 --max-num-seqs 8 --kv-cache-memory 8GiB $flag > $OUT/latency$flag.log 2>&1
  echo "latency $flag rc $? at ${SECONDS} s"; grep -v "^\s*$" $OUT/latency$flag.log | tail -8
done
ls -la ~/gguf
