# Session 44, call 2: the GGUF's second quarter.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf_q/part_ab
ls ~/gguf/part_aa || exit 3
cp .cache/gguf_q/part_ab ~/gguf/ && ls -la ~/gguf
