# Session 52 (CPU only; prepared for the next lease). At 1 request the default's drafted rounds ran +0.16 ms over
# fixed-7's on the H200 (run2, run4: host work of confidence scheduling, ~+159 us a step over a dozen calls). New
# default: `lease_rounds` 8 (`DraftingLease`): up to `bound_only` requests a load judged at a gain > 1 (average) runs 8 lean
# rounds between two judged ones (drafted, scheduled by Algorithm 1, their evidence kept; not judged, no bound
# priced). On this CPU -16 us of the default's ~60 us of proposer work a drafted round (`proposer_host_cost.py`).
# Does the default now reach 0.95 of fixed-7 at 1 request? Paired: plain decoding, fixed-7, the default and
# `confidence-unleased` (lease_rounds 0, the default until session 52), batch form at 1 and 2 requests, 16 prompt
# sets, run2's low profiles, no step log (ratios from every round); since session 52's H100 calls also
# `confidence-untimed` (the timed default paused 36-76% of its rounds at 1 request in three of five processes
# there, the untimed one never). Then `engine_host_cost.py` at 1 request (fixed-7,
# the default, unleased; 4 batches): where the host work went. Needs `../../h200-2026-12-04i/setup/bundle.sh
# part_00..04` first; carry the GPU wheels as run2 does.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-05/run2/low; W=~/o17; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
# The card's own profiles when P=here (an H100 came in session 52: the H200's would misprice its rounds).
if [ "${1:-}" = here ]; then PROF="--sps-method steps --sps-in-process --sps-paired --sps-sizes 1 2 4 8 --sps-warmup 3 \
  --save-sps $W/out/sps_batch.json"; P=$W/out; else PROF="--sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json"; fi
timeout 380 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 2 \
  --fixed 7 $PROF --prompt-sets 16 \
  --variants none fixed-7 confidence confidence-unleased confidence-untimed --interleave 16 --kv-cache-gib 6 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"
timeout 140 python3 $B/engine_host_cost.py --target $T --drafter ~/drafter_real --dtype auto --profiles $P \
  --concurrency 1 --sets 4 --modes fixed-7 confidence confidence-unleased > $W/out/host_cost_1.md 2>&1
echo "host cost rc $? at $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run7.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "at 1:|propose|draft|_plan|overlapped|_lean|observe|commit|idle|expected|schedule|execute" $W/out/host_cost_1.md | head -60
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
