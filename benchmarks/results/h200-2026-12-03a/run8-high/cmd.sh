# Session 32, call 8 (the machine went back after call 4; calls 5-7 trained the drafter again): 32 / 64 requests, 8 prompt sets, profiles measured first at 1-64,
# step logs; none / confidence / confidence-lookup / ngram-aware-7 in batch form, then the closed loop
# (--closed-loop 2). Measures `_find_gaps` (confidence closed 32 / 64: session 30 0.985 / 1.022) and the
# wrapper's forwarded reads (confidence-lookup 1-2.5 points below confidence in session 30).
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o5; rm -rf $W; mkdir -p $W/b $W/c
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
for form in batch closed; do
  extra=""; [ $form = closed ] && extra="--closed-loop 2"
  timeout 260 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
    --max-tokens 128 --concurrency 32 64 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 16 32 64 \
    --sps-warmup 3 --prompt-sets 8 $extra --save-sps $OUT/sps_$form.json \
    --variants none confidence confidence-lookup ngram-aware-7 --interleave 8 \
    --kv-cache-gib 8 --step-log $W/${form:0:1}/steps.jsonl --out $OUT/dspark_$form.md > $OUT/bench_$form.log 2>&1
  echo "$form rc $? at ${SECONDS} s"
  gzip -f $W/${form:0:1}/steps.jsonl; cp $W/${form:0:1}/steps.jsonl.gz $OUT/steps_$form.jsonl.gz
  grep -E "^[0-9]+ |profile at" $OUT/bench_$form.log | grep -v "step times" | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-300
  grep -E "rror|Trace" $OUT/bench_$form.log | tail -5
done
mkdir -p ~/spec && mv $OUT/spec_sps_*.json ~/spec/ 2>/dev/null  # 8 files at most come back
