# Session 57 (prepared, not run). run22 (H200, unpinned) put the default's host us a step outside the forward 145-300
# above plain decoding's at 8 / 32, where its timed proposer calls sum to 15-26 and the wall ratios of run24 rule out
# a step 25-40% slower: the script built the default second and timed plain decoding once. Here plain decoding is
# timed again after the default (`--modes none confidence none-again`, `none-again` new), pinned as run24, at 32 and
# 128 requests, on run24's H200 profiles: if `none-again` reads as the default does, run22's gap was order. Needs the
# five `../../h200-2026-12-04i/setup/bundle.sh` calls; carry the GPU wheels. ~200 s.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-05/run24/out-h200-high; W=~/o27; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
export OMP_NUM_THREADS=2
for C in 32 128; do
  timeout 200 taskset -c 2-5 python3 $B/engine_host_cost.py --target $T --drafter ~/drafter_real --dtype auto \
    --profiles $P --concurrency $C --sets 6 --modes none confidence none-again > $W/out/host_cost_$C.md 2>&1
  echo "C=$C rc $? at $((SECONDS - S0)) s"
done
tar -C $W -czf $OUT/run27.tar.gz out; grep -h " at [0-9]*: " $W/out/host_cost_*.md
