# Session 38, call 4: the first half of session 37's drafter (held-out 2.48 of 7; tar sha256 20c2d480...adad4).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/part_aa
mkdir -p ~/stash && cp .cache/drafter_stash/part_aa ~/stash/ && ls -la ~/stash
