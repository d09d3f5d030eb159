# Session 30, call 1: the first third of the SmolLM2 GGUF onto the machine (calls 2 and 3 carry the
# other two), then the H200 host's cost of session 29's `LookupAssist` settings (prompt_lookup_min 2,
# a search every step) on a paused step at 1 / 2 / 4 / 8 requests, against session 28's profiles
# (this CPU: +3.7 / 6.0 / 10.6 / 20.3 us).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_aa
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh > $OUT/env.log 2>&1
export PYTHONUNBUFFERED=1
B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-02e/run3-batch-rounds
timeout 150 python3 $B/lookup_host_cost.py --profiles $P --batch 1 2 4 8 --context 300 --min-n 2 --check-every 1 \
  > $OUT/lookup_host.log 2>&1
echo "lookup host rc $? at ${SECONDS} s"; tail -10 $OUT/lookup_host.log
python3 -c "from deepinfer_dspark.train.data import stdlib_docstrings; print('docstrings', len(stdlib_docstrings(None)))"
