# Session 27, call 4 (right after call 3): session 26's call 5 again (batch form: one batch of C
# prompts a call, 1/2/8 requests, 16 prompt sets, profiles measured first in this process), now
# with quiet stretches; step_log_report.py --plain: plain decode steps with and without features
# buffered (session 26: 1.301 against 1.063 ms for dormant steps at 1 request).
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o4; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout $((LIMIT - 20)) python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 3 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 \
  --sps-warmup 3 --prompt-sets 16 --save-sps $OUT/sps.json \
  --variants none none-again confidence fixed-3 fixed-7 --interleave 16 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
python3 packages/deepinfer-dspark/benchmarks/step_log_report.py $OUT/steps.jsonl.gz --plain 2>&1 | tail -30
