# Session 25, call 4 (right after call 3, the same drafter): the table at 64, 32, 128 and 256 (32 not first: session 24 read 0.690 there as a fresh process's first concurrency)
# requests, profiles measured first in this process at 1-256 requests (batch tails shrink to 1),
# 3 paired rounds; fixed-4 and fixed-7 stand for the fixed lengths (session 21: every fixed k
# ran at 0.15-0.6x plain decoding at 32-256).
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o4; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout $((LIMIT - 20)) python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 64 32 128 256 --fixed 4 7 --sps-method steps --sps-in-process \
  --sps-sizes 1 2 4 8 16 32 64 128 256 --sps-warmup 3 --save-sps $OUT/sps.json \
  --variants none none-again confidence fixed-4 fixed-7 --interleave 3 --prompt-sets 2 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
