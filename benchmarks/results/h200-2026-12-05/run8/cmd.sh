# Session 53. New default `bound_only_untimed` (up to bound_only requests, 1 by default, the drafted rounds are
# priced on the profiles, not at their measured time: on H100s in session 52 the timed default paused 36-76% of
# its rounds at 1 request in three of five processes). Paired: plain decoding, fixed-7, the default,
# `confidence-timed1` (the default until session 53) and `confidence-untimed` (no round timing at any load), batch
# form at 1 and 2 requests, 16 prompt sets, no step log (ratios from every round). `cmd.sh here` measures the
# card's own profiles first (an H100: the H200's would misprice its rounds); else run2's low H200 profiles.
# Needs `../../h200-2026-12-04i/setup/bundle.sh part_00..04` first; carry the GPU wheels as run2 does.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-05/run2/low; W=~/o18; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
if [ "${1:-}" = here ]; then PROF="--sps-method steps --sps-in-process --sps-paired --sps-sizes 1 2 4 8 --sps-warmup 3 \
  --save-sps $W/out/sps_batch.json"; else PROF="--sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json"; fi
timeout ${LIMIT:-420} python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 2 \
  --fixed 7 $PROF --prompt-sets 16 \
  --variants none fixed-7 confidence confidence-timed1 confidence-untimed --interleave 16 --kv-cache-gib 6 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run8.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
