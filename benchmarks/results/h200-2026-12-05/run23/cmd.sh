# Session 56, the last ~250 s of device time: run21's question without the GGUF or the drafter (no bundle calls).
# Does pinning the benchmark to its own cores narrow plain decoding's reading of itself? `bench_paused.py` on a
# random-weight target of SmolLM2-135M's shape (`random_target.py`: the config and tokenizer carried from
# .cache/smollm2_shape, made here with `random_target.py .cache/smollm2_shape --from-gguf GGUF --config-only`; the
# weights drawn on the device), plain decoding, plain decoding again and a paused DSpark engine (random drafter,
# a flat speculative profile: it never drafts from 2 requests), 8 and 32 requests, 12 paired rounds, 64 tokens;
# one process as is (`free`), one under `taskset -c 2-5` with OMP_NUM_THREADS=2 (`pinned`). Carry
# .cache/smollm2_shape and the GPU wheels.
source tools/gpu_env.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1
B=packages/deepinfer-dspark/benchmarks; W=~/o23; rm -rf $W ~/shape; mkdir -p $W/out; cp -r .cache/smollm2_shape ~/shape
python3 $B/random_target.py ~/shape > $W/out/random_target.log 2>&1 || { tail -3 $W/out/random_target.log; exit 3; }
S0=$SECONDS
for mode in free pinned; do
  PRE=""; [ $mode = pinned ] && PRE="taskset -c 2-5" && export OMP_NUM_THREADS=2
  timeout 85 $PRE python3 $B/bench_paused.py --target ~/shape --concurrency 8 32 --rounds 12 --max-tokens 64 \
    --kv-cache-gib 2 --out $W/out/paused_$mode.md > $W/out/bench_$mode.log 2>&1
  echo "$mode rc $? at $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run23.tar.gz out   # (kept if the next one runs out)
done
for mode in free pinned; do echo "== $mode"; cat $W/out/paused_$mode.md 2>/dev/null | grep -v "^|---" ; done
grep -hE "rror|Trace" $W/out/bench_*.log | tail -4
