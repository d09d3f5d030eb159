# Session 14, call 5 (right after call 4, the device time left): at 1 and 8 requests, where call 3
# found confidence's drafted rounds after a pause paying 15-31 ms flushes, confidence against
# confidence-direct (every step's context projected at once, no paused buffer), 5 paired rounds.
ls ~/drafter_real/config.json ~/spec_k1_sps.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P="--sps $HOME/sps.json --spec-sps $HOME/spec_sps.json --spec-sps-k1 $HOME/spec_k1_sps.json"
timeout 330 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 --fixed 3 7 $P \
  --variants none none-again confidence confidence-direct fixed-7 --interleave 5 \
  --kv-cache-gib 8 --step-times --out $OUT/dspark_direct.md > $OUT/bench_direct.log 2>&1
grep -E "^[0-9]+ |rror|Trace" $OUT/bench_direct.log | cut -c1-400 | tail -40
