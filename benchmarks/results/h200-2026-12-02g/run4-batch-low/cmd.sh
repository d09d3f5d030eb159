# Session 30, call 4 (right after call 3, its drafter): batch form, 1/2/8 requests, 16 prompt sets,
# profiles measured first; confidence-lookup (session 29: prompt_lookup_min 2, searched every step, rounds
# priced 1.15 less 0.35), ngram-aware-7 (load-aware lookup, no drafter) and ngram-7 beside confidence, fixed-7.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o4; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
timeout 420 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 \
  --sps-warmup 3 --prompt-sets 16 --save-sps $OUT/sps.json \
  --variants none confidence confidence-lookup fixed-7 ngram-7 ngram-aware-7 --interleave 16 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
python3 $B/step_log_report.py $OUT/steps.jsonl.gz --acceptance 2>&1 | tail -30
