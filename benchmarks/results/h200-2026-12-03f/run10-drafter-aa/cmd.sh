# Session 37, call 10: the first half of call 3's drafter (bf16 tar, sha256 20c2d480...adad4), re-split in 33 MiB parts.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/part_aa
mkdir -p ~/stash && cp .cache/drafter_stash/part_aa ~/stash/ && ls -la ~/stash
