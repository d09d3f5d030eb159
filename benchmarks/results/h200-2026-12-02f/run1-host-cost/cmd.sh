# Session 29, call 1: the first third of the SmolLM2 GGUF onto the machine (calls 2 and 3, issued at
# once, carry the other two; the tracked tree, 15.7 MiB, no longer fits beside a half), then the H200 host's cost of session 28's
# `LookupAssist` (prompt_lookup_min) on a paused step, and of confidence scheduling on a drafted
# round (proposer_host_cost.py), both against session 28's call-3 profiles.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_aa
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh > $OUT/env.log 2>&1
export PYTHONUNBUFFERED=1
B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-02e/run3-batch-rounds
timeout 150 python3 $B/lookup_host_cost.py --profiles $P --batch 1 2 8 --context 300 > $OUT/lookup_host.log 2>&1
echo "lookup host rc $? at ${SECONDS} s"; tail -8 $OUT/lookup_host.log
timeout 100 python3 $B/proposer_host_cost.py --profiles $P --batch 1 2 8 > $OUT/proposer_host.log 2>&1
echo "proposer host rc $? at ${SECONDS} s"; tail -8 $OUT/proposer_host.log
