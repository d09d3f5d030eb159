# Session 44, call 1: the GGUF's first quarter (the tree is ~31 MB: a third of the GGUF beside it passes the carry limit no more).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf_q/part_aa
mkdir -p ~/gguf && cp .cache/gguf_q/part_aa ~/gguf/ && ls -la ~/gguf
