# Session 25, call 5 (right after call 4): 128, 32 and 256 again with 5 paired rounds, no fixed k (call 4: none-again read 0.943 at 32 and 0.736 at 256, 3 rounds too few)
# requests, profiles measured first in this process at 1-256 requests (batch tails shrink to 1),
# 3 paired rounds; fixed-4 and fixed-7 stand for the fixed lengths (session 21: every fixed k
# ran at 0.15-0.6x plain decoding at 32-256).
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o5; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout $((LIMIT - 20)) python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 128 32 256 --fixed 7 --sps-method steps --sps-in-process \
  --sps-sizes 1 2 4 8 16 32 64 128 256 --sps-warmup 3 --save-sps $OUT/sps.json \
  --variants none none-again confidence --interleave 5 --prompt-sets 2 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
