# Session 6, call 2: structured output after starting the fill before the launch and trimming the
# mask thread's Python; llguidance threads default and 8; switch interval 100 us and 50 us.
source tools/gpu_env.sh >/dev/null 2>&1
for si in 1e-4 5e-5; do
timeout 140 python3 packages/deepinfer-core/benchmarks/structured_overhead.py --random-weights .cache/smol_tok \
  --device cuda --dtype bfloat16 --batch 1 64 --tokens 64 --repeats 3 --settle --timeline \
  --switch-interval $si --mask-threads 0 8 > $OUT/structured_$si.txt 2>&1
grep -v Writing $OUT/structured_$si.txt | tail -9
done
