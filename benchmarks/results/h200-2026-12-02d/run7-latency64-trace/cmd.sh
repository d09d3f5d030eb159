# Session 27, call 7 (a fresh machine, the last ~300 s): why `bench latency` at batch 64 read TPOT
# 2.99 ms with mixed graphs against 2.31 without (call 6; batches 1 and 8 equal, TTFT 18.8 vs 68.8):
# step_trace.py on that workload (64 requests of 128 in / 128 out, Qwen3-0.6B random weights,
# budget 2048) without and with mixed graphs: each step kind's count and median ms.
# Carry: .cache/gpu_wheels
source tools/gpu_env.sh > $OUT/env.log 2>&1
export PYTHONUNBUFFERED=1
python3 -c "import sys; from pathlib import Path; sys.path.insert(0, 'packages/deepinfer-core/benchmarks'); \
from gpu_speed import QWEN3_06B, write_config; write_config(Path.home() / 'm06', QWEN3_06B)"
for flag in --no-mixed-cuda-graphs --mixed-cuda-graphs --no-mixed-cuda-graphs --mixed-cuda-graphs; do
  timeout 60 python3 packages/deepinfer-core/benchmarks/step_trace.py --model $HOME/m06 --load-format dummy \
    --dtype bfloat16 --kv-cache-memory 8GiB --max-model-len 2048 --num-prompts 64 --input-len 128 128 \
    --output-len 128 128 --max-num-seqs 64 $flag > $OUT/trace$flag.log 2>&1
  echo "trace $flag rc $? at ${SECONDS} s"; grep -E "^wall|^\| (graph|eager|mixed)|outside" $OUT/trace$flag.log
done
