# Session 51 (CPU only; prepared for the next lease). On this CPU the default's host work a step where drafting is
# ruled out fell from +17-32 to +9 us over plain decoding's at 64 requests and from +61-69 to 0-10 at 256
# (`dormant_host_cost.py`: dormant stretches that hold over a bucket's counts, re-judged at the ask, longer pauses
# after a bound's rule-out, and a kept-features pause declined once the bound rules its load out). Does the default
# now reach plain decoding at 64-256 in batch form (run5: 0.974 at 64, five rounds all below)?
# none / none-again (the noise floor) / confidence, batch form at 64, 128 and 256, 8 prompt sets, run2's high
# profiles; the step log in the even rounds (features captured and dormant/quiet stretches per step), ratios from
# the odd ones. Needs `../../h200-2026-12-04i/setup/bundle.sh part_00..04` first; carry the GPU wheels as run2 does.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-05/run2/high; W=~/o16; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout 280 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 64 128 256 \
  --fixed 7 --sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json --prompt-sets 8 \
  --variants none none-again confidence --interleave 8 --kv-cache-gib 6 \
  --step-log $W/out/steps.jsonl --step-log-every 2 --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; xz -9 -T0 -f $W/out/steps.jsonl || gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run6.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-330
python3 $B/step_log_report.py $W/out/steps.jsonl* --rounds 2>&1 | grep -E "^\| (64|128|256) " | head -30
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
