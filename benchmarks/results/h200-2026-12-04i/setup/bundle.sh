# Session 74: rebuilt with session 74's drafter (held-out 3.05; drafter.tar.gz sha256 489dc447...7287, bundle tar sha256
# 0ebfdc01...a8e7), six 24.3 MiB parts as in session 70.
# Session 72: rebuilt with session 72's drafter (held-out 3.03; drafter.tar.gz sha256 d8e13c1b...741f, bundle tar sha256
# b910b0cd...e897), six 24.3 MiB parts as in session 70; the tree is 33.8 MiB.
# Session 70: a 29.1 MiB part beside the 33.2 MiB tracked tree was refused as over the 64 MiB carry, so the same tar is now `split -n 6 -d` into six 24.3 MiB parts, part_00..part_05; the last joins.
# Session 69: rebuilt (same recipe) with session 69's drafter (held-out 3.06; drafter.tar.gz sha256 5cd4ea32...c8ec, tar
# sha256 8d4c24bd...2534), five 29.1 MiB parts: with the 33.2 MiB tree, ~62.3 of the 64 MiB carry.
# Session 48: the GGUF and the drafter in five calls instead of ten. `.cache/bundle/part_00`..`_04` are
# `split -n 5` of a tar holding SmolLM2-135M-Instruct.Q4_1.gguf (sha256 b179c952...db53) and drafter.tar.gz (the
# drafter stash's four parts joined, sha256 fd3ae479...e924; tar sha256 db5a6ba4...edea), 29.1 MiB a part: with the
# 25.5 MiB tree, 54.6 MiB of the 64 MiB carry. Make them on the CPU machine:
#   mkdir -p /tmp/bsrc .cache/bundle && cp ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/bsrc/ &&
#   cat .cache/drafter_stash/drafter_gz_a? > /tmp/bsrc/drafter.tar.gz &&
#   tar -cf /tmp/bundle.tar -C /tmp/bsrc SmolLM2-135M-Instruct.Q4_1.gguf drafter.tar.gz && split -n 5 -d /tmp/bundle.tar .cache/bundle/part_
# Each call: `bash benchmarks/results/h200-2026-12-04i/setup/bundle.sh part_0X` (X = 0..4, in order, at once one after
# the other: ~ survives only while the machine stays warm), carrying .cache/bundle/part_0X alone. The last joins and
# unpacks: the GGUF under ~/.cache/deepinfer/models, the drafter as ~/drafter_real (what `ready.sh` looks for).
# Session 81: the tracked tree grew to 37.7 MiB, so a 24.3 MiB part was refused as over the carry; the same tar is
# `split -n 7 -d` into seven 20.8 MiB parts, and every call passes the last part's name as its second argument
# (`bundle.sh part_00 part_06` .. `bundle.sh part_06 part_06`): without it the last part is part_05, as before.
P=$1; LAST=${2:-part_05}; mkdir -p ~/bundle
case $P in
  part_0[0-9]) cp .cache/bundle/$P ~/bundle/ || exit 3 ;;
  *) echo "unknown part $P"; exit 2 ;;
esac
ls -la ~/bundle
if [ "$P" = "$LAST" ]; then
  for i in $(seq 0 ${LAST#part_0}); do ls ~/bundle/part_0$i || exit 3; done
  rm -rf ~/bundle_x && mkdir -p ~/bundle_x ~/.cache/deepinfer/models
  cat ~/bundle/part_0? | tee >(sha256sum >&2) | tar -x -C ~/bundle_x || exit 3
  mv ~/bundle_x/SmolLM2-135M-Instruct.Q4_1.gguf ~/.cache/deepinfer/models/ || exit 3
  sha256sum ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf ~/bundle_x/drafter.tar.gz
  gunzip -c ~/bundle_x/drafter.tar.gz | tar -x -C ~ && rm -rf ~/drafter_real && mv ~/drafter_bf16 ~/drafter_real || exit 3
  ls -la ~/drafter_real; rm -rf ~/bundle ~/bundle_x
fi
