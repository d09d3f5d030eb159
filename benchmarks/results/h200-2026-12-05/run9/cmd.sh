# Session 53 (the lease's last ~260 s). On this CPU (`dormant_host_cost.py --concurrency 32`) the default's host work a
# step at 32 requests is +19.3 us over plain decoding's, and +3.2 without its prompt-lookup wrapper (`prompt_lookup_min`
# 0; the always-dormant stub +2.4): the wrapper's searches at each dormant ask. Does the closed loop at 32 (run3: the
# default 0.900-0.969 of plain decoding) reach plain decoding without it? Paired: plain decoding, the default and
# `confidence-alone` (no prompt lookup), closed loop at 32 (`--closed-loop 3`), ${SETS:-4} prompt sets, run2's closed
# profiles (no in-process profiling: saves ~40 s), no step log. Needs the five `bundle.sh` calls first.
# Session 54 added `none-again` (the noise floor) and `dormant-stub` (the default's engine over a proposer that declares
# every step dormant: core's share). Session 54's CPU (`dormant_host_cost.py --closed-loop 3 --concurrency 32`): host
# us a step over plain decoding: stub +3.1, alone +6.6, default +16.8; in steps at >= 28 running, the proposer's calls
# 6.9 us (default) against 6.0 (alone); the rest is the tail's (lookup rounds and searches below 8 requests).
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-05/run2/closed; W=~/o19; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout ${LIMIT:-300} python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 32 \
  --fixed 7 --sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json --prompt-sets ${SETS:-4} \
  --variants none confidence confidence-alone dormant-stub none-again --interleave ${SETS:-4} --closed-loop 3 --kv-cache-gib 6 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run9.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
