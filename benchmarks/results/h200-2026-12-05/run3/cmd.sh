# Session 50 diagnosis: run2's closed loop read the default at 0.913 of plain decoding at 32 requests (untraced rounds
# 0.883-0.962) while its one traced round read 0.973 with no drafted round at all. Where did the untraced rounds draft?
# The same closed loop at 32 only, every round traced with the ledger (the ratios here carry the harness: read them
# as a diagnosis, not as a result), none / none-again / confidence / fixed-7, six prompt sets.
# Needs `../../h200-2026-12-04i/setup/bundle.sh part_00..04` first; carry the GPU wheels as run2 does.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
W=~/o13; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout 330 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 32 \
  --fixed 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes 1 2 4 8 16 32 --sps-warmup 3 --prompt-sets 6 \
  --save-sps $W/out/sps_batch.json --variants none none-again confidence fixed-7 \
  --interleave 6 --closed-loop 3 --kv-cache-gib 6 --step-log $W/out/steps.jsonl --step-log-ledger \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; xz -9 -T0 -f $W/out/steps.jsonl || gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run3.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
