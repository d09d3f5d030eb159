# Session 40, call 5: the drafter's last two parts, joined (tar.gz sha256 e49dad68...08ad7); then 32 requests,
# 8 prompt sets, batch form, profiles first: none, the default confidence engine (session 40: a young bucket's
# loss declines the features where keeping them costs more than a round gains) and none-again, with step logs.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/drafter_gz_ac .cache/drafter_stash/drafter_gz_ad
ls ~/stash/drafter_gz_aa ~/stash/drafter_gz_ab || exit 3
cp .cache/drafter_stash/drafter_gz_a? ~/stash/ && cat ~/stash/drafter_gz_a? | sha256sum
cat ~/stash/drafter_gz_a? | gunzip | tar -x -C ~ && rm -rf ~/drafter_real && mv ~/drafter_bf16 ~/drafter_real || exit 3
source tools/gpu_env.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
W=~/o32; rm -rf $W; mkdir -p $W/out
timeout 240 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 32 \
  --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 16 32 --sps-warmup 3 --prompt-sets 8 \
  --save-sps $W/out/sps_batch.json --variants none confidence none-again --interleave 8 --kv-cache-gib 8 \
  --step-log $W/out/steps.jsonl --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "32 rc $? at ${SECONDS} s"; gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run_32.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-400
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
