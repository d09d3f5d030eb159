# Session 28, call 1: the first half of the SmolLM2 GGUF onto the machine (call 2, issued at once,
# carries the second half), then the mixed graphs that end at the hidden states (session 27, after
# its GPU calls; CPU-tested only): (a) test_mixed_graph.py and DSpark's draft/observe graph tests on
# CUDA; (b) 24 SmolLM2-shaped replies of a graph engine against an eager one, with prompt logprobs;
# (c) `bench latency` on Qwen3-0.6B random weights: batch 64 alone, both flag orders, then 1 8 64
# (session 27 read TPOT 2.99 ms with graphs against 2.31 without at 64 after batches 1 and 8).
# Carry: .cache/gpu_wheels .cache/gguf/part_aa .cache/smollm2_cfg
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh > $OUT/env.log 2>&1
export PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -q -rf --tb=short packages/deepinfer-core/tests/test_mixed_graph.py \
  packages/deepinfer-dspark/tests/test_draft_graph.py packages/deepinfer-dspark/tests/test_observe_graph.py > $OUT/pytest.log 2>&1
echo "pytest rc $? at ${SECONDS} s"; tail -4 $OUT/pytest.log
timeout 120 python3 - > $OUT/equal.log 2>&1 <<'PY'
import random, time
from deepinfer_core import LLM, SamplingParams
common = dict(model=".cache/smollm2_cfg", load_format="dummy", device="cuda", dtype="bfloat16", deterministic=True,
              max_model_len=1024, max_num_seqs=16, max_num_batched_tokens=256, kv_cache_memory=4 << 30)
t0 = time.perf_counter(); graphs = LLM(mixed_cuda_graphs=True, **common); t1 = time.perf_counter()
eager = LLM(mixed_cuda_graphs=False, **common); t2 = time.perf_counter()
print(f"start-up: mixed graphs {t1 - t0:.1f} s, without {t2 - t1:.1f} s")
rng = random.Random(0)
reqs = [{"prompt_token_ids": [rng.randrange(100, 49000) for _ in range(rng.randint(20, 600))]} for _ in range(24)]
p = SamplingParams(temperature=0, max_tokens=32, ignore_eos=True, logprobs=2, prompt_logprobs=1)
a, b = graphs.generate(reqs, p), eager.generate(reqs, p)
got, want = [o.outputs[0].token_ids for o in a], [o.outputs[0].token_ids for o in b]
print("equal", got == want, sum(x == y for x, y in zip(got, want)), "of", len(got),
      "replays", getattr(graphs.engine.runner.mixed_graphs, "replays", None))
def top(o):
    return [max(d, key=lambda t: d[t].logprob) if d else None for d in (o.prompt_logprobs or [])]
print("prompt-logprob argmax equal", sum(top(x) == top(y) for x, y in zip(a, b)), "of", len(a))
PY
echo "equal rc $? at ${SECONDS} s"; grep -v Warn $OUT/equal.log | tail -4
python3 -c "import sys; from pathlib import Path; sys.path.insert(0, 'packages/deepinfer-core/benchmarks'); \
from gpu_speed import QWEN3_06B, write_config; write_config(Path.home() / 'm06', QWEN3_06B)"
run() {  # name, flag, batch sizes...
  local name=$1 flag=$2; shift 2
  timeout 60 python3 -m deepinfer_cli bench latency --model $HOME/m06 --load-format dummy --dtype bfloat16 \
    --batch-sizes "$@" --input-len 128 --output-len 128 --max-model-len 2048 --max-num-seqs 64 \
    --kv-cache-memory 8GiB $flag > $OUT/latency-$name.log 2>&1
  echo "latency $name rc $? at ${SECONDS} s"; grep -v "^\s*$" $OUT/latency-$name.log | tail -6
}
run 64-no --no-mixed-cuda-graphs 64; run 64-mixed --mixed-cuda-graphs 64
run 64-mixed-b --mixed-cuda-graphs 64; run 64-no-b --no-mixed-cuda-graphs 64
run 1-8-64-mixed --mixed-cuda-graphs 1 8 64
