# Session 56 (prepared); ran in session 57 on an H200 (out-h200). Where the default drafts nothing (most steps at 8-32 requests, all at 64-256 in
# the median calls) its GPU work is plain decoding's, so its speed against plain decoding is its extra host work a
# step. Measured directly, that is a median over thousands of steps rather than a ratio of a few calls' wall times
# (whose floor is ~4% wide: run18-19). `engine_host_cost.py` at 8 and 32 requests, plain decoding against the
# default, 6 batches each, bf16 as the benchmarks run, run19's H100 profiles: the host us a step outside the
# forward and the proposer's calls. On this repository's CPU the default's steps at 5-8 running cost +0.8-1.6 us
# (`dormant_host_cost.py --by-running`). Needs the five `../../h200-2026-12-04i/setup/bundle.sh` calls; carry the
# GPU wheels. ~150 s.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-05/run19/out-h100; W=~/o22; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
for C in 8 32; do
  timeout 150 python3 $B/engine_host_cost.py --target $T --drafter ~/drafter_real --dtype auto --profiles $P \
    --concurrency $C --sets 6 --modes none confidence > $W/out/host_cost_$C.md 2>&1
  echo "C=$C rc $? at $((SECONDS - S0)) s"
done
tar -C $W -czf $OUT/run22.tar.gz out; head -40 $W/out/host_cost_*.md
