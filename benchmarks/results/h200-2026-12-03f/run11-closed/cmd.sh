# Session 37, call 11: the drafter's second half joined, then call 3's drafter at 8 requests in a closed loop
# (--closed-loop 3: 24 prompts a call, at most 8 running, the next admitted as one finishes), where a batch's tail
# does not idle slots: none, the default confidence engine, none-again, 6 prompt sets, profiles measured first.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/part_ab
cp .cache/drafter_stash/part_ab ~/stash/ && cat ~/stash/part_a? | sha256sum && cat ~/stash/part_a? | tar -x -C ~ \
  && rm -rf ~/drafter_real && mv ~/drafter_bf16 ~/drafter_real || exit 3
ls ~/drafter_real/config.json ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
W=~/oc; rm -rf $W; mkdir -p $W/out
timeout 115 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 8 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 \
  --sps-warmup 3 --prompt-sets 6 --closed-loop 3 --save-sps $W/out/sps_closed.json \
  --variants none confidence none-again --interleave 6 \
  --kv-cache-gib 8 --step-log $W/out/steps.jsonl --out $W/out/dspark_closed.md > $W/out/bench_closed.log 2>&1
echo "closed rc $? at ${SECONDS} s"
gzip -f $W/out/steps.jsonl
tar -C $W -czf $OUT/run_closed.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_closed.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $W/out/bench_closed.log | tail -5
