# Session 33, call 8 (right after call 7, its drafter; first planned as call 4): gpu_plan item 0, the default engine (DSpark + prompt
# lookup, `confidence`) against DSpark alone (`confidence-alone`) and plain decoding at 32 / 64 / 128 requests in
# batch form and 32 / 64 in the closed loop (--closed-loop 2); 8 prompt sets, profiles measured first, step logs.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o4; rm -rf $W; mkdir -p $W/b $W/c
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
for form in batch closed; do
  extra=""; lim=240; conc="32 64 128"; sizes="1 2 4 8 16 32 64 128"
  [ $form = closed ] && extra="--closed-loop 2" && lim=230 && conc="32 64" && sizes="1 2 4 8 16 32 64"
  timeout $lim python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
    --max-tokens 128 --concurrency $conc --fixed 7 --sps-method steps --sps-in-process --sps-sizes $sizes \
    --sps-warmup 3 --prompt-sets 8 $extra --save-sps $OUT/sps_$form.json \
    --variants none confidence confidence-alone none-again --interleave 8 \
    --kv-cache-gib 8 --step-log $W/${form:0:1}/steps.jsonl --out $OUT/dspark_$form.md > $OUT/bench_$form.log 2>&1
  echo "$form rc $? at ${SECONDS} s"
  gzip -f $W/${form:0:1}/steps.jsonl; cp $W/${form:0:1}/steps.jsonl.gz $OUT/steps_$form.jsonl.gz
  grep -E "^[0-9]+ |profile at" $OUT/bench_$form.log | grep -v "step times" | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-330
  grep -E "rror|Trace" $OUT/bench_$form.log | tail -5
done
mkdir -p ~/spec && mv $OUT/spec_sps_*.json ~/spec/ 2>/dev/null  # 8 files at most come back
