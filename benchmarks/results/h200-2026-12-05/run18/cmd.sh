# Session 56 (run on an H100 as written). "Never below plain decoding" against a noise floor measured in the same
# process: plain decoding, the default and plain decoding again (`none-again`) at 8 / 32 / 64 / 128 / 256 requests,
# batch form, 128 tokens, 6 paired rounds, profiles measured in the process, no step log. Needs the five
# `../../h200-2026-12-04i/setup/bundle.sh` calls first; carry the GPU wheels.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks; W=~/o18; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout 540 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 8 32 64 128 256 \
  --fixed 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes 1 8 32 64 128 256 --sps-warmup 3 --prompt-sets 6 \
  --save-sps $W/out/sps_batch.json --variants none confidence none-again --interleave 6 --kv-cache-gib 2.5 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run18.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-600
