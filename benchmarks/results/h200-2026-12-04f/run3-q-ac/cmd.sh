# Session 44, call 3: the GGUF's third quarter.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf_q/part_ac
ls ~/gguf/part_aa ~/gguf/part_ab || exit 3
cp .cache/gguf_q/part_ac ~/gguf/ && ls -la ~/gguf
