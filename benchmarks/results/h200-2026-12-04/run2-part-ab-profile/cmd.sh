# Session 40, call 2: the GGUF's second third; then the ops of one flush at 32 requests with 100 steps buffered
# (flush_cost.py --torch-profile), to see where a flush's milliseconds go.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ab
ls ~/gguf/part_aa || exit 3
cp .cache/gguf/part_ab ~/gguf/ && ls -la ~/gguf
source tools/gpu_env.sh > /dev/null 2>&1
B=packages/deepinfer-dspark/benchmarks
timeout 90 python3 $B/flush_cost.py --config $B/smollm2_drafter/config.json --device cuda --requests 32 \
  --prompt 150 --steps 100 --finish-at 1000 --vary 7 --repeats 3 --torch-profile > $OUT/profile.txt 2>&1
echo "profile rc $? at ${SECONDS} s"; cut -c1-200 $OUT/profile.txt | head -40
