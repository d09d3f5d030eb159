# Session 20, call 4 (right after call 3): round_trace.py at 1 and 2 requests with the drafter of
# call 2 and session 18's profiles: each judged round labelled opening or body, its expected,
# verified and accepted drafts, the ratio, the ledger's gain and the round's own priced gain; then
# fixed-7's accepted drafts on the same batches by reply position.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
timeout 280 python3 packages/deepinfer-dspark/benchmarks/round_trace.py --target $T --drafter ~/drafter_real \
  --sps $P/sps.json --spec-sps $P/spec_sps.json --concurrency 1 2 --calls 3 > $OUT/trace.log 2>&1
echo "rc $?"; grep -c "^c=" $OUT/trace.log
grep -E "fixed-|rror|Trace" $OUT/trace.log | cut -c1-200 | tail -30
grep "^c=1 " $OUT/trace.log | head -30 | cut -c1-230
