# Session 54. Is the prompt-lookup wrapper worth its host work? On an H100 (run9, closed loop at 32) DSpark alone
# (`confidence-alone`, `prompt_lookup_min` 0) ran 1.022 of plain decoding and the default (with the wrapper) 0.962;
# the traced call's steps at 3-4 running ran 0.35 ms over DSpark alone's (the wrapper's searches and pricing, every
# step where a lookup round could pay: 17-20 us a step on this repository's CPU, `lookup_host_cost.py --replies`).
# This call pairs plain decoding, fixed-7, the default and DSpark alone in batch form at 1 and 8 requests (the
# issue's loads below 32), ${SETS:-10} prompt sets, run2 low's profiles, no step log. Needs the five `bundle.sh` calls.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-05/run2/low; W=~/o20; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout ${LIMIT:-420} python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 8 \
  --fixed 7 --sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json --prompt-sets ${SETS:-10} \
  --variants none fixed-7 confidence confidence-alone --interleave ${SETS:-10} --kv-cache-gib 6 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run10.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
