# Session 30, call 8 (right after call 7): the same engines at 128 requests, batch form, 8 prompt sets.
# Batch form, 8 prompt sets, profiles measured first at 1-64; none / confidence /
# confidence-lookup / ngram-aware-7.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o8; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
timeout 300 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 128 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 16 32 64 128 \
  --sps-warmup 3 --prompt-sets 8 --save-sps $OUT/sps.json \
  --variants none confidence confidence-lookup ngram-aware-7 --interleave 8 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | grep -v "step times" | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
