# Session 33, call 9 (right after call 8; 297 s of device time left, so 8 requests only): gpu_plan items 0a and 0a1
# in batch form, 16 prompt sets, profiles measured first, step logs: plain decoding, the default engine, DSpark alone,
# DSpark alone with `measure_round_times` (`confidence-alone-rounds`), plain decoding again.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o5; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
timeout 255 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 8 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 \
  --sps-warmup 3 --prompt-sets 16 --save-sps $OUT/sps_batch.json \
  --variants none confidence confidence-alone confidence-alone-rounds none-again --interleave 16 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_batch.md > $OUT/bench_batch.log 2>&1
echo "batch rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/steps_batch.jsonl.gz
grep -E "^[0-9]+ |profile at" $OUT/bench_batch.log | grep -v "step times" | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-330
grep -E "rror|Trace" $OUT/bench_batch.log | tail -5
