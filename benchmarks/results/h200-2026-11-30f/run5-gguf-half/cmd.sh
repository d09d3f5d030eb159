# Session 9, call 5: the GGUF's first half again (the machine of calls 1-4 was given back) for a
# quick check of the per-bucket pause ledger in call 6.
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh > /dev/null 2>&1
ls -la ~/gguf
