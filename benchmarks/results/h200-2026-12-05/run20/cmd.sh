# Session 56. The 1-request goal (within 5% of the best fixed k) read 0.911 of fixed-5 in session 55's table and
# 1.028 in session 56's (both H100, 12 paired rounds, the harness collecting garbage between calls since session 55).
# More rounds decide it: plain decoding, the default, fixed-5, fixed-7 and plain decoding again (the noise floor) at
# 1 request, 30 paired rounds, profiles measured in the process. Needs the five `../../h200-2026-12-04i/setup/bundle.sh`
# calls first; carry the GPU wheels.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
W=~/o20; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout 500 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 \
  --fixed 5 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes 1 2 4 8 --sps-warmup 3 --prompt-sets 30 \
  --save-sps $W/out/sps_batch.json --variants none confidence fixed-5 fixed-7 none-again --interleave 30 \
  --kv-cache-gib 2.5 --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run20.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//; s/so far.*paired rounds/ paired rounds/" | cut -c1-900
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
