# Session 14, call 4 (right after call 3): the same drafter and call 3's profiles; the fixed-length
# sweep k = 1..7 next to none and confidence. (a) 1, 8 and 32 requests: ten engines alive at once
# (with none-again), 3 paired rounds. (b) 64, 128 and 256 requests: none, confidence and the fixed
# k not run in call 3, one round each (fixed k runs there at a third of plain decoding or less).
ls ~/drafter_real/config.json ~/spec_k1_sps.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P="--sps $HOME/sps.json --spec-sps $HOME/spec_sps.json --spec-sps-k1 $HOME/spec_k1_sps.json"
timeout 250 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 --fixed 1 2 3 4 5 6 7 $P \
  --variants none none-again confidence fixed-1 fixed-2 fixed-3 fixed-4 fixed-5 fixed-6 fixed-7 --interleave 3 \
  --kv-cache-gib 6 --out $OUT/dspark_sweep_small.md > $OUT/bench_sweep_small.log 2>&1
grep -E "^[0-9]+ |rror|Trace" $OUT/bench_sweep_small.log | cut -c1-200 | tail -40
timeout 240 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 64 128 256 --fixed 1 2 3 4 5 6 7 $P \
  --variants none confidence fixed-1 fixed-2 fixed-4 fixed-5 fixed-6 fixed-7 --interleave 1 \
  --kv-cache-gib 6 --out $OUT/dspark_sweep_large.md > $OUT/bench_sweep_large.log 2>&1
grep -E "^[0-9]+ |rror|Trace" $OUT/bench_sweep_large.log | cut -c1-200 | tail -40
