# Session 57. run24 again at 8 / 64 / 128 / 256 (6 rounds, pinned, no step log), to pool with run24's rounds: the
# default against plain decoding run twice, where run25 found the default's matched steps no slower than plain
# decoding's run again except in rounds that drifted as a whole. Read with
# `paired_pool.py ../run24/out-*/bench_batch.log OUT/bench_batch.log --against none-again`. Needs the five
# `../../h200-2026-12-04i/setup/bundle.sh` calls first; carry the GPU wheels. ~200 s.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
export OMP_NUM_THREADS=2; W=~/o26; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout ${LIMIT:-230} taskset -c 2-5 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 \
  --concurrency 8 64 128 256 --fixed 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes 1 8 32 64 128 256 \
  --sps-warmup 3 --prompt-sets 6 --save-sps $W/out/sps_batch.json --variants none confidence none-again \
  --interleave 6 --kv-cache-gib 2.5 --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run26.tar.gz out
python3 $B/paired_pool.py $W/out/bench_batch.log --against none-again | grep -v "| none |"
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
