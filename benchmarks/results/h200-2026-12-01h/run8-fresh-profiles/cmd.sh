# Session 23, call 8 (right after call 7, its 150-s drafter): calls 3-5 ran on session 18's
# profiles (plain 1.05 ms and k=7 rounds 2.62 ms at 1 request), but their own rounds took 3.0 ms
# (plain 1.0) to 3.9 ms (plain 1.2): drafting priced 20% cheaper than it was, so at 1 request each
# other request probed (capturing 31 steps, +0.1 ms each, then 2 losing rounds): 5% a probed call,
# 0.978x of none in all. Here the profiles are measured first in this process (--sps-in-process:
# the state the table runs in), at 1-8 requests, then the table at 1, 2 and 8 requests.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o8; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout $((LIMIT - 15)) python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 4 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 \
  --sps-warmup 3 --save-sps $OUT/sps.json --variants none none-again confidence fixed-4 fixed-7 --interleave 12 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
