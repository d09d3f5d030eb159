# Session 14, call 6 (a fresh machine, the device time left): one flush of the paused buffer on
# the H200, take and projection timed apart (random drafter weights, the SmolLM2 drafter's config):
# call 3 found confidence's drafted rounds after a pause at 4-5 of 8 requests paying 15-31 ms.
source tools/gpu_env.sh >/dev/null 2>&1
timeout 150 python3 packages/deepinfer-dspark/benchmarks/flush_cost.py \
  --config packages/deepinfer-dspark/benchmarks/smollm2_drafter/config.json --device cuda --dtype bfloat16 \
  --requests 1 4 8 32 --repeats 5 --torch-profile > $OUT/flush_cost.log 2>&1
grep -E "requests|capture|rror" $OUT/flush_cost.log
