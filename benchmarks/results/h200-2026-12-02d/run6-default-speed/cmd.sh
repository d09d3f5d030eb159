# Session 27, call 6 (a fresh machine): mixed-step CUDA graphs on by default, buckets now up to 8192
# tokens. (a) test_mixed_graph.py on CUDA (the eager engine now asks --no-mixed explicitly);
# (b) the GPU-speed throughput row (gpu_speed.py's throughput_async arguments: Qwen3-0.6B random
# weights, 256 requests, in/out 100-1024, budget 8192) with --no-mixed-cuda-graphs and with the
# default, alternating, twice each; (c) its latency row (batch 1 / 8 / 64, 128 in / 128 out) both ways.
# Carry: .cache/gpu_wheels
source tools/gpu_env.sh > $OUT/env.log 2>&1
export PYTHONUNBUFFERED=1
timeout 120 python3 -m pytest -q -rf --tb=short packages/deepinfer-core/tests/test_mixed_graph.py > $OUT/pytest.log 2>&1
echo "pytest rc $? at ${SECONDS} s"; tail -3 $OUT/pytest.log
python3 -c "import sys; from pathlib import Path; sys.path.insert(0, 'packages/deepinfer-core/benchmarks'); \
from gpu_speed import QWEN3_06B, write_config; write_config(Path.home() / 'm06', QWEN3_06B)"
M=$HOME/m06
COMMON="--model $M --load-format dummy --dtype bfloat16 --kv-cache-memory 40GiB --max-model-len 2048"
for i in 1 2; do
  for flag in --no-mixed-cuda-graphs --mixed-cuda-graphs; do
    timeout 90 python3 -m deepinfer_cli bench throughput $COMMON --num-prompts 256 --input-len 100 1024 \
      --output-len 100 1024 --seed 0 --max-num-seqs 256 --max-num-batched-tokens 8192 $flag > $OUT/tput$i$flag.log 2>&1
    echo "throughput $i $flag rc $? at ${SECONDS} s"; grep -iE "tok/s|elapsed|DeepInfer" $OUT/tput$i$flag.log | tail -3
  done
done
for flag in --no-mixed-cuda-graphs --mixed-cuda-graphs; do
  timeout 80 python3 -m deepinfer_cli bench latency $COMMON --batch-sizes 1 8 64 --input-len 128 --output-len 128 \
    --max-num-seqs 64 $flag > $OUT/latency$flag.log 2>&1
  echo "latency $flag rc $? at ${SECONDS} s"; grep -E "^│" $OUT/latency$flag.log | tail -3
done
