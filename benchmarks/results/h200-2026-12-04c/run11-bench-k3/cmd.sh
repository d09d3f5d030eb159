# Session 41, second lease, call 11: call 10's drafter (K = 3 replies per docstring, held-out 3.29 of 7) at 1,
# then 2, then 8 requests in one process (12 prompt sets each, batch form, step logs): the default, fixed-7
# and plain decoding twice.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build
ls ~/drafter_k3/config.json ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
source tools/gpu_env.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
W=~/o11; rm -rf $W; mkdir -p $W/out
timeout 400 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_k3 --max-tokens 128 --concurrency 1 2 8 \
  --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 --sps-warmup 3 --prompt-sets 12 \
  --save-sps $W/out/sps_batch.json --variants none confidence fixed-7 none-again --interleave 12 \
  --kv-cache-gib 8 --step-log $W/out/steps.jsonl --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? at ${SECONDS} s"; gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-1000
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
