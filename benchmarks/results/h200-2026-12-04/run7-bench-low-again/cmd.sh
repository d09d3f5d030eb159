# Session 40, call 7: call 6 again (the same command), for the spread between calls.
# none-again, 16 prompt sets, batch form, profiles first, step logs (as session 39's call 9).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build
ls ~/drafter_real/config.json ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
source tools/gpu_env.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
for run in 8:16:200:"1 2 4 8":"8" 1-2:16:180:"1 2 4 8":"1 2"; do
  IFS=: read tag sets lim sizes conc <<< "$run"
  W=~/o$tag; rm -rf $W; mkdir -p $W/out
  timeout $lim python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
    --max-tokens 128 --concurrency $conc --fixed 7 --sps-method steps --sps-in-process --sps-sizes $sizes \
    --sps-warmup 3 --prompt-sets $sets --save-sps $W/out/sps_batch.json \
    --variants none confidence fixed-7 none-again --interleave $sets \
    --kv-cache-gib 8 --step-log $W/out/steps.jsonl --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
  echo "$tag rc $? at ${SECONDS} s"; gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run_$tag.tar.gz out
  grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-400
  grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
done
