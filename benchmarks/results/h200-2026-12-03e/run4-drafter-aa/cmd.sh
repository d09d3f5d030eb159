# Session 36, call 4: the stashed drafter's first part (session 34's, held-out 2.23 of 7; as in session 35).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/part_aa
mkdir -p ~/stash && cp .cache/drafter_stash/part_aa ~/stash/ && ls -la ~/stash
