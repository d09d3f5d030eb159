# Session 27, call 3 (right after call 2, its drafter): the closed loop of session 26's call 4
# (--closed-loop 4, 1/2/8 requests, 16 prompt sets, profiles measured first in this process) with
# mixed-step CUDA graphs: none+mixed first (the paired ratios' base), none without them (what the
# graphs save on joiner steps: step_log_report.py --prefills), a second none+mixed (the noise floor),
# then confidence and fixed-7 with the graphs.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o3; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
timeout $((LIMIT - 30)) python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 \
  --sps-warmup 3 --prompt-sets 16 --closed-loop 4 --save-sps $OUT/sps.json \
  --variants none+mixed none none-again+mixed confidence+mixed fixed-7+mixed --interleave 16 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
python3 $B/step_log_report.py $OUT/steps.jsonl.gz --baseline none+mixed --prefills 2>&1 | tail -30
