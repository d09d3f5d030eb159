# Session 25, call 8 (right after call 7): call 7 without --deterministic (production kernels), 8 prompt sets, 8 rounds.
# measured first in this process (--sps-in-process, 1-8 requests: session 23 found profiles from
# another process priced rounds ~20% cheap), then the table at 1, 2 and 8 requests with
# session 23's code (probe_overhead 2 + 4/B plain steps, the weighed regret), 16 paired rounds,
# the step log beside it, nvidia-smi sampled every 200 ms.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o8; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 200 > $W/clocks.csv 2>&1 &
SMI=$!
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout $((LIMIT - 20)) python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 \
  --sps-warmup 3 --prompt-sets 8 --save-sps $OUT/sps.json --variants none confidence confidence-whole fixed-7 --interleave 8 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
kill $SMI
gzip -f $W/steps.jsonl $W/clocks.csv; cp $W/steps.jsonl.gz $W/clocks.csv.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
