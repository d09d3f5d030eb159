# Session 40, call 1: the GGUF's first third; the packages installed; then what one flush of the paused
# buffer costs at 8 and 32 requests (flush_cost.py, random drafter weights, projection graphs): prompts of 150
# rows and 30 / 60 / 100 decode steps buffered (all requests running), with and without --vary 7 (a new row
# count at every flush, as in an engine); and prompts of 20 rows at 100 steps (rows against pairs).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_aa
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/ && ls -la ~/gguf
source tools/gpu_env.sh > $OUT/env.log 2>&1; echo "env rc $? at ${SECONDS} s"; tail -2 $OUT/env.log
export PYTHONUNBUFFERED=1
B=packages/deepinfer-dspark/benchmarks; C=$B/smollm2_drafter/config.json
for run in 150:30:0 150:30:7 150:60:0 150:60:7 150:100:0 150:100:7 20:100:7; do
  IFS=: read p s v <<< "$run"
  timeout 60 python3 $B/flush_cost.py --config $C --device cuda --requests 8 32 --prompt $p --steps $s \
    --finish-at 1000 --vary $v --repeats 5 2>&1 | grep -v capture_all | sed "s/^/prompt $p steps $s vary $v: /"
done > $OUT/flush.txt
echo "flush done at ${SECONDS} s"; cat $OUT/flush.txt
