# Session 39, call 6 (a fresh lease): the GGUF's first third and the packages installed (this CPU checkout was new: the
# drafter stash of session 37 is gone with it, so this lease trains one and brings it back in call 3).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_aa
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/ && ls -la ~/gguf
source tools/gpu_env.sh > $OUT/env.log 2>&1; echo "env rc $? at ${SECONDS} s"; tail -3 $OUT/env.log
