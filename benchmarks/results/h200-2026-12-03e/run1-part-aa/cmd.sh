# Session 36, call 1: the first third of the SmolLM2 GGUF onto the machine (calls 2 and 3 carry the others)
# and the packages installed once (later calls find them).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_aa
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/ && ls -la ~/gguf
source tools/gpu_env.sh > $OUT/env.log 2>&1; echo "env rc $? at ${SECONDS} s"; tail -3 $OUT/env.log
