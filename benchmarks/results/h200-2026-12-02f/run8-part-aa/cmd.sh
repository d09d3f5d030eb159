# Session 29, call 8 (a fresh machine, the last ~440 s of device time): the first third of the GGUF
# only; calls 9 and 10 follow at once.
# Carry: .cache/gguf/part_aa
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/ && ls -la ~/gguf
