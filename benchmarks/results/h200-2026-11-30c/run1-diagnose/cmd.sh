# Session 6, call 1: structured-output timeline (mask-thread phases, llguidance threads) and the
# paused DSpark engine after observe_step (run 7's command of session 5, unchanged).
source tools/gpu_env.sh >/dev/null 2>&1
nproc > $OUT/host.txt; lscpu | grep -i "model name\|^CPU(s)\|MHz" >> $OUT/host.txt
timeout 170 python3 packages/deepinfer-core/benchmarks/structured_overhead.py --random-weights .cache/smol_tok \
  --device cuda --dtype bfloat16 --batch 1 64 --tokens 64 --repeats 3 --settle --timeline \
  --mask-threads 0 2 4 8 > $OUT/structured.txt 2>&1
grep -v Writing $OUT/structured.txt | tail -12
bash benchmarks/results/h200-2026-11-30b/run7-dspark-idle/cmd.sh
