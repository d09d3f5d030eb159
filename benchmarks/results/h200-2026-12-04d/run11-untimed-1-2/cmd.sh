# Session 42, call 11 (a fresh machine after calls 1-5 again): at 1 and 2 requests, the default against
# `confidence-untimed` (rounds priced on the profile alone, `measure_round_times` off), fixed-7 and plain
# decoding twice (12 prompt sets, batch form; the step log now also holds the rounds' measured / predicted
# time as the default reads it, `round_time`): do the first reads at 1 request (0.53-0.98 in calls 8-10)
# come from the first rounds' timings?
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build
ls ~/drafter_real/config.json ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
source tools/gpu_env.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
W=~/o11; rm -rf $W; mkdir -p $W/out
timeout 560 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 2 \
  --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 --sps-warmup 3 --prompt-sets 12 \
  --save-sps $W/out/sps_batch.json --variants none confidence confidence-untimed fixed-7 none-again --interleave 12 \
  --kv-cache-gib 8 --step-log $W/out/steps.jsonl --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? at ${SECONDS} s"; gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-1000
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
