# Session 50: run2's traced rounds at 1 request put the default's drafted rounds at +0.16 ms (median) over fixed-7's
# (2.96 against 2.80 ms) with the same drafts verified (6.9 a round) and the same steps: host work of confidence
# scheduling. Where it goes on the H200's host: `engine_host_cost.py` times every proposer call and DSpark's phases
# at 1 and 8 requests (fixed-7 against the default, 6 batches each, the run2 low profiles), bf16 as the benchmarks run.
# And at 256 (none against the default, 2 batches, the run2 high profiles): run2's traced round there read the
# default's plain steps +0.61 ms (median) over plain decoding's, with no round drafted, and its call +450 ms.
# Needs the setup of run2 (`h200-2026-12-04i/setup/bundle.sh part_00..04`).
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
W=~/o14; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
for C in 1 8; do
  timeout 150 python3 $B/engine_host_cost.py --target $T --drafter ~/drafter_real --dtype auto \
    --profiles benchmarks/results/h200-2026-12-05/run2/low --concurrency $C --sets 6 --modes fixed-7 confidence \
    > $W/out/host_cost_$C.md 2>&1
  echo "C=$C rc $? at $((SECONDS - S0)) s"
done
timeout 200 python3 $B/engine_host_cost.py --target $T --drafter ~/drafter_real --dtype auto \
  --profiles benchmarks/results/h200-2026-12-05/run2/high --concurrency 256 --sets 2 --modes none confidence \
  > $W/out/host_cost_256.md 2>&1; echo "C=256 rc $? at $((SECONDS - S0)) s"
tar -C $W -czf $OUT/run4.tar.gz out; grep -E "at [0-9]+:|remove|track|dormant|propose|draft|_plan|overlapped|observe|commit|idle|expected|schedule" $W/out/host_cost_*.md | head -80
