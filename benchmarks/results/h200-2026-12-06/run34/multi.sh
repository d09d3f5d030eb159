# Several run34 processes in one device call (session 71: a call's start and transfers cost ~30-60 s of device time,
# a start refused 90-180 s): `N=3 CAND=confidence-rescale WARM=4 CONC=8 SETS=12 bash .../run34/multi.sh`, carrying
# what cmd.sh needs (.cache/gpu_wheels; after a fresh setup it may follow `setup/bundle.sh part_05` in the same call).
# The first process gets `TMO_FIRST` (160 s: the first profile calls after a setup compile), the others `TMO` (150 s;
# session 72: processes took 100-120 s, give them 150).
# Each process's tar lands as $OUT/run34_<i>.tar.gz and its log as $OUT/run34_<i>.txt; the call's output keeps each
# process's two pooled lines. Pool them here with `paired_pool.py OUT/bench_batch.log ... --by-log` as in cmd.sh.
# Session 81: out-h100-s81-a..k are `CONC="2 8" CAND=confidence-frontier` (three calls, N=3/4/4, 106-147 s a
# process); a call returns at most eight files, so at most four processes a call.
# Session 82 (H200): out-h200-s82-a..f are `CAND=confidence-headroom`: `N=4 TMO_FIRST=165 TMO=140 CONC="2 8"` ran past
# the call's 600 s (a process at both concurrencies needs more than 165 s on the H200: a-c ran 2 requests, b also 8),
# then `N=3 TMO_FIRST=150 TMO=145 CONC=8` (d-f, 115-119 s a process).
# Session 83 (H100): out-h100-s83-a..h are `N=4 CONC="2 8" EVERY=9 CAND=confidence-headroom` (two calls, TMO_FIRST=165
# TMO=138, then 135/135; 110-162 s a process): EVERY=9 traces rounds 0 and 9 (prompt set 9), pool with --drop-every 9.
# Session 84: process i builds its engines from variant i-1 on (+ROT0; cmd.sh's ROT, `--build-rotate`).
D=benchmarks/results/h200-2026-12-06/run34
for i in $(seq 1 ${N:-3}); do
  [ "$i" = 1 ] && T=${TMO_FIRST:-160} || T=${TMO:-150}
  ROT=$((${ROT0:-0} + i - 1)) TMO=$T bash $D/cmd.sh > $OUT/run34_$i.txt 2>&1
  [ -f $OUT/run34.tar.gz ] && mv $OUT/run34.tar.gz $OUT/run34_$i.tar.gz
  echo "== process $i (TMO=$T)"; grep -E "^rc |\| confidence|^\| (drafted|plain) \|" $OUT/run34_$i.txt | cut -c1-200 | head -9
done
