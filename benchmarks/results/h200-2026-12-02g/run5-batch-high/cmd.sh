# Session 30, call 5 (right after call 4): prompt lookup's session-29 settings at 32 / 64 requests.
# Batch form, 8 prompt sets, profiles measured first at 1-64; none / confidence /
# confidence-lookup / ngram-aware-7.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o5; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
timeout 470 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 32 64 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 16 32 64 \
  --sps-warmup 3 --prompt-sets 8 --save-sps $OUT/sps.json \
  --variants none confidence confidence-lookup ngram-aware-7 --interleave 8 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | grep -v "step times" | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
