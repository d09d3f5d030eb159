# Session 28, call 5 (right after call 4, the last ~500 s): batch form at 1 and 2 requests again
# (call 3: confidence 0.994 / 0.989 against fixed-7 1.101 / 0.886), with the whole-reply variants
# beside confidence: the noise of one more pass, and whether confidence's probes at the openings
# are what keeps it off the k=7 gain at 1 request. step_log_report.py --acceptance.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o5; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
timeout 400 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 \
  --sps-warmup 3 --prompt-sets 16 --save-sps $OUT/sps.json \
  --variants none confidence confidence-rounds confidence-full fixed-7 --interleave 16 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ " $OUT/bench_paired.log | cut -c1-330
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
python3 $B/step_log_report.py $OUT/steps.jsonl.gz --acceptance 2>&1 | tail -30
