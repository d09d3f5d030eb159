# Session 29, call 9: the second third of the GGUF.
# Carry: .cache/gguf/part_ab
ls ~/gguf/part_aa || exit 3
cp .cache/gguf/part_ab ~/gguf/ && ls -la ~/gguf
