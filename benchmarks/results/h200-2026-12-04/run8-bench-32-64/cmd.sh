# Session 40, call 8: 32 and 64 requests, 6 prompt sets each, batch form, profiles first: none, the default
# confidence engine and none-again, with step logs.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build
ls ~/drafter_real/config.json ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
source tools/gpu_env.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
for run in 32:6:200:"1 2 4 8 16 32" 64:6:250:"1 2 4 8 16 32 64"; do
  IFS=: read tag sets lim sizes <<< "$run"
  W=~/o$tag; rm -rf $W; mkdir -p $W/out
  timeout $lim python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency $tag \
    --fixed 7 --sps-method steps --sps-in-process --sps-sizes $sizes --sps-warmup 3 --prompt-sets $sets \
    --save-sps $W/out/sps_batch.json --variants none confidence none-again --interleave $sets --kv-cache-gib 8 \
    --step-log $W/out/steps.jsonl --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
  echo "$tag rc $? at ${SECONDS} s"; gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run_$tag.tar.gz out
  grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-400
  grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
done
