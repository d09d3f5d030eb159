# Session 19, call 3 (right after call 2): round_trace.py at 1, 2 and 8 requests with the drafter
# of call 2 and session 18's profiles (the same drafter architecture, so the same round costs):
# each judged round's expected, verified and accepted drafts, the ratio, the ledger's gain and the
# round's own priced gain (tau, round and plain-step times from the profiles); then fixed-7's
# accepted drafts on the same batches by reply position.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
timeout 400 python3 packages/deepinfer-dspark/benchmarks/round_trace.py --target $T --drafter ~/drafter_real \
  --sps $P/sps.json --spec-sps $P/spec_sps.json --concurrency 1 2 8 --calls 3 > $OUT/trace.log 2>&1
echo "rc $?"; grep -c "^c=" $OUT/trace.log
grep -E "fixed-|rror|Trace" $OUT/trace.log | cut -c1-200 | tail -30
grep "^c=1 " $OUT/trace.log | head -30 | cut -c1-230
