# Session 60 (prepared), run in session 61 on an H100 (out-h100-s61; core BENCHMARKS.md, session 61). The GPU host's `LLM.chat` prompt encoding, one by one
# against a call's prompts tokenized in one batch (`ChatEncoder.encode_many`, this session), with the table's cores
# (2-5): packages/deepinfer-core/BENCHMARKS.md, session 60 (this repository's 2-core CPU: -30% a conversation at
# 256, -11% at 64). ~20 s; carry nothing beyond the tree (the GGUF in place: the five bundle calls). Dry-run here:
# `OUT=/tmp/o32 PY=.venv/bin/python NOREADY=1 bash benchmarks/results/h200-2026-12-05/run32/cmd.sh`.
[ "${NOREADY:-0}" = 1 ] || source benchmarks/results/h200-2026-12-04i/setup/ready.sh
mkdir -p $OUT; S0=$SECONDS
taskset -c ${CORES:-2-5} ${PY:-python3} packages/deepinfer-core/benchmarks/chat_encoding.py --conversations 64 256 \
  --repeats 5 | tee $OUT/chat_encoding.md
echo "rc ${PIPESTATUS[0]} in $((SECONDS - S0)) s"
