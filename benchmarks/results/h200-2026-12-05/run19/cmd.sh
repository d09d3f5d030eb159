# Session 56 (run on an H100 as written, the call after run18 on the same machine). run18 at 8 and 32 with more
# rounds (14) and a step log every 3rd round (its rounds are left out of the paired ratio).
source benchmarks/results/h200-2026-12-04i/setup/ready.sh; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks; W=~/o19; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout 400 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 8 32 --fixed 7 \
  --sps-method steps --sps-in-process --sps-paired --sps-sizes 1 2 4 8 16 32 --sps-warmup 3 --prompt-sets 14 \
  --save-sps $W/out/sps_batch.json --variants none confidence none-again --interleave 14 --kv-cache-gib 2.5 \
  --step-log $W/out/steps.jsonl --step-log-every 3 --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; xz -9 -T0 -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run19.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//; s/so far.*paired rounds/ paired rounds/" | cut -c1-700
