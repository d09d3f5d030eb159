# Session 32, call 4 (right after call 3, its drafter): 1 / 2 / 8 requests, 16 prompt sets, profiles measured
# first, step logs. Batch form: none / confidence / confidence-lookup / ngram-aware-7 / ngram-7 / none-again;
# then the closed loop (--closed-loop 4) without ngram-7. Measures session 30's CPU work: `RoundCosts` pricing
# (a lone round at 8 now +1.71 plain steps), the batch-tail weights while draining, the forwarded (92693ad)
# reads (gpu_plan 0, 0a, 0a2b). Session 30: ngram-aware-7 batch 1.272 / 1.042 / 0.858, closed 1.298 / 1.205 /
# 1.016; confidence-lookup batch 1.150 / 1.032 / 0.805, closed 1.208 / 1.173 / 1.006.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o4; rm -rf $W; mkdir -p $W/b $W/c
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
timeout 235 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 \
  --sps-warmup 3 --prompt-sets 16 --save-sps $OUT/sps_batch.json \
  --variants none confidence confidence-lookup ngram-aware-7 ngram-7 none-again --interleave 16 \
  --kv-cache-gib 8 --step-log $W/b/steps.jsonl --out $OUT/dspark_batch.md > $OUT/bench_batch.log 2>&1
echo "batch rc $? at ${SECONDS} s"
gzip -f $W/b/steps.jsonl; cp $W/b/steps.jsonl.gz $OUT/steps_batch.jsonl.gz
grep -E "^[0-9]+ |profile at" $OUT/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-300
grep -E "rror|Trace" $OUT/bench_batch.log | tail -5
timeout 300 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 \
  --sps-warmup 3 --prompt-sets 16 --closed-loop 4 --save-sps $OUT/sps_closed.json \
  --variants none confidence confidence-lookup ngram-aware-7 none-again --interleave 16 \
  --kv-cache-gib 8 --step-log $W/c/steps.jsonl --out $OUT/dspark_closed.md > $OUT/bench_closed.log 2>&1
echo "closed rc $? at ${SECONDS} s"
gzip -f $W/c/steps.jsonl; cp $W/c/steps.jsonl.gz $OUT/steps_closed.jsonl.gz
grep -E "^[0-9]+ |profile at" $OUT/bench_closed.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-300
grep -E "rror|Trace" $OUT/bench_closed.log | tail -5
