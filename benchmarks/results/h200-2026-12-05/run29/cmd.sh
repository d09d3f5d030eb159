# Session 58 (prepared, not run): run24 `high` (the floor at 64 / 128 / 256: none, default, none again; pinned, no step
# log) with the profiles of session 57's H200 run24 given (`--sps` / `--spec-sps`) instead of measured in the
# process: in run24 the profiles took ~120 s of a ~180 s call and the rounds ~40 s, so one call here runs SETS rounds
# (24 by default, ~115 s of rounds) where run24 ran 8. The default drafts nothing at 64-256 with either profile
# (session 57's and 58's calls), so the profile's source does not change what is compared. Read with
# `paired_pool.py OUT/bench_batch.log --against none-again`, then pooled with the earlier calls' logs
# (BENCHMARKS "fifty-fourth session": 174 rounds read 0.982, 0.961-1.004). Setup as docs/gpu_plan.md step 0;
# carry the GPU wheels. Dry-run on this CPU (`--concurrency 2 4 --max-tokens 8 --dtype float32 --prompt-sets 2`).
source benchmarks/results/h200-2026-12-04i/setup/ready.sh; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks; P=benchmarks/results/h200-2026-12-05/run24/out-h200-high; SETS=${SETS:-24}
export OMP_NUM_THREADS=2; W=~/o29; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout ${LIMIT:-560} taskset -c 2-5 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 \
  --concurrency 64 128 256 --fixed 7 --sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json --prompt-sets $SETS \
  --variants none confidence none-again --interleave $SETS --kv-cache-gib 2.5 --out $W/out/dspark_batch.md \
  > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run29.tar.gz out
python3 $B/paired_pool.py $W/out/bench_batch.log --against none-again | grep -v "| none |"
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
