# Session 40, second lease, call 6: 8 requests (12 prompt sets: none, confidence, fixed-7, none-again) and 32
# (6 sets: none, confidence, none-again), batch form, profiles first, step logs; the summary line now prints
# the flush costs the engine measured (`FlushCosts.extra` at C, `per_pair`) and the keep cost at C.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build
ls ~/drafter_real/config.json ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
source tools/gpu_env.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
for run in 8:12:160:"1 2 4 8":"none confidence fixed-7 none-again" 32:6:160:"1 2 4 8 16 32":"none confidence none-again"; do
  IFS=: read tag sets lim sizes variants <<< "$run"
  W=~/o$tag; rm -rf $W; mkdir -p $W/out
  timeout $lim python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency $tag \
    --fixed 7 --sps-method steps --sps-in-process --sps-sizes $sizes --sps-warmup 3 --prompt-sets $sets \
    --save-sps $W/out/sps_batch.json --variants $variants --interleave $sets --kv-cache-gib 8 \
    --step-log $W/out/steps.jsonl --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
  echo "$tag rc $? at ${SECONDS} s"; gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run_$tag.tar.gz out
  grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-900
  grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
done
