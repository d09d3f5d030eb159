# Session 84 (no device): `SUF=+packed` gives every engine `packed_graph_inputs` (bench_variants' `+packed`: a
# graph-replayed decode step's inputs in one copy; core's `executor/packed_inputs.py`), e.g. `SUF=+packed N=4 CONC=8
# EVERY=12 CAND=confidence-no-headroom WARM=4 SETS=12 bash multi.sh`; pool with the suffixed names
# (`--engine confidence+packed --against none-again+packed`). Empty (the default) runs as before. `ROT=N` (new,
# `bench_dspark.py --build-rotate`): the engines are built from the Nth variant on; multi.sh gives process i ROT=i-1
# (+ROT0), so no variant is always built second (the default was, in every process of sessions 63-83).
# Session 78 on an H100 (the bundle, first start granted): four calls of `N=4 TMO_FIRST=170 TMO=150
# CAND="confidence-resume-bound confidence-rounds-hurdle" WARM=4 CONC=8 SETS=12 bash multi.sh` (TMO_FIRST=150 after
# the first; 90-125 s a process, none over its limit; out-h100-s78-a..p): `resume_bound` 0.997 (0.977-1.019) of the
# default (not adopted), `min_gain` 1.1 1.014 (1.002-1.027), 1.008 (0.996-1.021) over sessions 77-78's 26 and still
# 0.990 of plain decoding again (not adopted); the default 0.977 (0.968-0.987) of plain decoding again over sessions
# 75-78's 44. From session 78 each row also prints `call drafts [...]` (each round's verification steps, untraced
# rounds too) and the call's pooled line splits the default's untraced rounds by whether its call drafted
# (`paired_pool.py --split-drafted`); `EVERY` (new) sets `--step-log-every` (2 by default; `EVERY=12`: round 0 traced
# alone, to tell the tracing from the prompt sets: each untraced round read the default below the traced one before
# it over sessions 75-78). Next: `N=5 TMO_FIRST=150 TMO=130 CAND=confidence-rounds-hurdle WARM=4 CONC=8 SETS=12 bash
# multi.sh` (one candidate: ~80 s a process), then the same with `EVERY=12`.
# Session 77 on an H100 (the bundle, first start granted): three calls of `N=4 TMO_FIRST=170 TMO=140
# CAND="confidence-rounds-hurdle confidence-opening-runs" WARM=4 CONC=8 SETS=12 bash multi.sh` (the third TMO=150;
# 103-151 s a process, one process of each of the last two calls over its limit; out-h100-s77-a..j): `min_gain` 1.1
# 0.999 (0.971-1.028), `opening_runs` 0.997 (0.970-1.025) of the default, neither adopted; the default 0.975
# (0.965-0.985) of plain decoding again over sessions 75-77's 28 processes. Next: `N=4 TMO_FIRST=170 TMO=150
# CAND="confidence-resume-bound confidence-rounds-hurdle" WARM=4 CONC=8 SETS=12 bash multi.sh` (`resume_bound`, new:
# the bound also pays a resumption; dspark BENCHMARKS "seventy-third session").
# Session 76: over sessions 63-75's 75 processes (on the CPU) the default's traced calls that drafted nothing read
# 1.001 of plain decoding again, those that drafted 0.950 (`drafted_calls.py --budget`, new); after each process's
# first round the openings drafted while the openings' ledger still averaged above 1. Then on an H100: `N=3
# TMO_FIRST=170 TMO=140 CAND="confidence-opening-runs confidence-probe16" WARM=4 CONC=8 SETS=12 bash multi.sh` and N=1
# (out-h100-s76-a..d, 92-104 s a process): `opening_runs` 1.015 (0.985-1.047), `probe_every` 16 1.006 (0.955-1.061) of
# the default, neither adopted. Next: `N=4 TMO_FIRST=170 TMO=140 CAND="confidence-rounds-hurdle
# confidence-opening-runs" WARM=4 CONC=8 SETS=12 bash multi.sh` (`min_gain` 1.1: the simulator's pick, dspark
# BENCHMARKS "seventy-second session"), as many calls as a lease allows.
# Session 75 on an H100 (session 74's drafter, the bundle): `N=3 TMO_FIRST=190 TMO=180 CAND="confidence-alone
# confidence-search-quarter" WARM=4 CONC=8 SETS=12 bash multi.sh`, then N=5, N=4, N=3 with TMO=140/120 (~95 s a process;
# out-h100-s75-a..n, the second call's fifth process lost: eight files a call): without the wrapper 0.993 (0.975-1.012)
# of the default, a quarter of its search budget 1.012 (0.994-1.030) untraced but 0.999 over all rounds; the default
# 0.971 (0.956-0.985) of plain decoding again over the 14 (dspark BENCHMARKS "seventy-first session"). At 5-8 running
# requests no lookup round can pay: session 74's `spec` spike is DSpark's re-judgement every `probe_every` rounds.
# Next: `N=6 TMO_FIRST=150 TMO=120 CAND=confidence-probe16 WARM=4 CONC=8 SETS=12 bash multi.sh` (`probe_every` 16).
# Session 74 on an H100 (a drafter retrained, held-out 3.05): `PHASES=1 N=3 TMO_FIRST=170 TMO=160
# CAND="confidence-share-floor dormant-stub" WARM=4 CONC=8 SETS=12 bash multi.sh` (out-h100-s74-a..c), then the same
# without PHASES, N=3 and N=2 (-d..h): the floor 0.992 (0.914-1.076) of the default over the eight, not adopted; the
# default 0.977 (0.964-0.990) of plain decoding again over sessions 67-74's 37 processes without phases. The phase
# logs put a spike of 0.13-0.16 ms in the default's `spec` phase every 8 steps of its dormant calls: the
# prompt-lookup wrapper's searches at each stretch's end (dspark BENCHMARKS "seventieth session").
# Next: `N=3 TMO_FIRST=190 TMO=180 CAND="confidence-alone confidence-search-quarter" WARM=4 CONC=8 SETS=12 bash multi.sh`.
# Session 73: `PHASES=1` adds `--step-log-phases` (`step_phases.py`: each traced step's host ms by phase; read with
# `slow_step_phases.py OUT/steps.jsonl.xz --quiet`): where the default's slow steps in calls that drafted nothing go.
# Session 72 on an H100 (a drafter retrained, held-out 3.03): `N=5 TMO_FIRST=150 TMO=100 CAND=confidence-share-floor WARM=4
# CONC=8 SETS=12 bash multi.sh`: process 1 ran in 119 s (out-h100-s72-a, a noisy lease: plain decoding run again 0.945),
# processes 2-5 hit TMO=100 in their profile calls: give each process TMO=150. The default 0.980 (0.968-0.992) of plain
# decoding again over sessions 67-72's 32 processes.
# Session 71 on an H100: `N=4 TMO_FIRST=160 TMO=105 CAND=confidence-rescale WARM=4 CONC=8 SETS=12 bash multi.sh`
# (beside this: several processes in one call; out-h100-s71-a..d): `rescale_stragglers` 0.994 (0.956-1.034) of the
# default, not adopted; the default 0.974 of plain decoding again over the four, 0.983 (0.972-0.994) over sessions 67-71.
# Session 70 on an H100: `CAND=confidence-probe-transition WARM=4 CONC=8 SETS=12 TMO=100` three times (out-h100-s70-a..c:
# the default 0.985 / 0.974 / 0.954 of plain decoding again), then `CAND=confidence-run-noise` seven times at 74724e8
# (d-f timed out at TMO=100 in their profile calls, the first after a fresh setup: use TMO=160; g-j: `run_noise`
# 1.006 (0.938-1.078) of the default, not adopted); the default 0.984 (0.972-0.997) over sessions 67-70's 27 processes.
# Session 69 on an H100 (a drafter retrained, held-out 3.06): `CAND=confidence-probe-transition WARM=4 CONC=8 SETS=12
# TMO=100` three times (out-h100-s69-a..c): the default 1.003 / 0.994 / 0.947 of plain decoding again.
# Session 68 on an H100: `CAND=confidence-probe-transition WARM=4 CONC=8 SETS=12 TMO=170` eight times (out-h100-s68-a..h,
# ~80 s each): 0.996 (0.976-1.016) of the default, not adopted; the default 0.987 of plain decoding again over the eight.
# Session 67 on an H100: `CAND="confidence-young-runs confidence-young-share" WARM=4 CONC=8 SETS=12 TMO=400` four
# times (out-h100-s67-a..d: `young_runs` 1.016 (1.000-1.033) of the default, adopted), then with `young_runs` the
# default `CAND=confidence-young-share` five times (-e..i): the default 1.002 (0.975-1.029) of plain decoding again
# over the nine; dspark BENCHMARKS "sixty-third session".
# Session 66 on an H100: `CAND=confidence-age8k WARM=4 CONC=8 SETS=12 TMO=300` three times (out-h100-s66-a..c):
# 1.005 (0.921-1.096) of the default, not adopted; the default 0.966 (0.951-0.981) of plain decoding again over the 13
# processes of sessions 65-66; dspark BENCHMARKS "sixty-second session" (what one probe costs a call at 8).
# Session 65 on an H100: `CAND=confidence-drained CONC=8 SETS=12` twice and `SETS=20` once (out-h100-s65-f..h: 0.982 of
# the default), `CAND="confidence-hurdle-15 confidence-alone-hurdle-15"` (-i), then with `WARM=4` (new: `--warmup-calls`)
# `CAND=confidence-hurdle-15` twice (-j, -k) and with `dormant-stub` (-l), `CAND=confidence-probe-share` three times
# (-m..o: 1.027 of the default, 0.986 of plain decoding again); dspark BENCHMARKS "sixty-first session". A CAND of
# several names runs them all (the pooling lines below then need `--engine NAME` one at a time).
# Next: `CAND=confidence-age8k WARM=4 CONC=8 SETS=12 TMO=300` three times (session 65's last candidate,
# `acceptance_age_rounds` 8192: simulated only).
# Session 64 on an H100: `CAND=confidence-opening-runs CONC=8 SETS=12` twice (out-h100-s64-a, -b: 0.997 / 0.990 of
# the default), `CAND=dormant-stub CONC="8 32" SETS=10` (-c), `CAND=confidence-hurdle CONC=8 SETS=12` (-d; `min_gain`
# 1.2: 0.994), all at b55f9bc, and `CAND=dormant-stub CONC=8 SETS=12` at 51a7c33 (-e, the exact straggler factor);
# per traced call against plain decoding's: `drafted_calls.py OUT/steps.jsonl.xz --calls`; dspark BENCHMARKS "sixtieth session".
# Next: `CAND=confidence-drained CONC=8 SETS=12 TMO=300` (session 64's candidate, `drained_batches`; its one call this
# session, with `SETS=10 TMO=115`, timed out in the profile calls: give it the full 300 s).
# Session 63: ran on an H100 once as written (out-h100-s63-a) and twice with `CONC=8 SETS=12` (out-h100-s63-b, -c):
# the hurdle 0.990 (0.970-1.012) of the default at 8 over 16 untraced rounds, no gain; dspark BENCHMARKS "fifty-ninth session".
# `CAND=NAME` runs another candidate in the hurdle's place: `confidence-opening-runs` (session 63's candidate, next:
# an opening run's start and end priced into its rounds' judgement where the body loses) or `confidence-whole`
# (openings judged with the rest of the reply; session 63's simulation: no gain).
# Prepared: a hurdle against the default's loss at 8 requests. Session 62's table at 8 on an H100
# (run2-table/out-h100-s62-low, traced calls): the two calls that drafted their bodies (29 / 33 rounds) ran 153.6 /
# 151.1 ms against plain decoding's 140.1 / 136.4 (sums of their steps) and fixed-7's 142.0 / 139.8.
# `confidence-rounds-hurdle` is the default (rounds timed, as by default) with `min_gain` 1.1: a drafted round must
# be judged 1.1x plain decoding to count as a win. At 8 requests `bound_only` (1) does not apply, so this is what a
# hurdle above one request does there; at 1 request, since session 63's change (`min_gain` above `bound_only` only),
# the two engines run one policy: a reading of the noise between two engines of one process.
# Plain decoding, the default, the candidate and plain decoding again in one process, pinned (run24's method),
# every second round traced with the pause ledgers (`--step-log-ledger`: the judged gains of the rounds drafted at
# 8). Pool: `paired_pool.py OUT/bench_batch.log --against none-again --drop-every 2` and `--engine
# confidence-rounds-hurdle --against confidence`. Needs the five `../../h200-2026-12-04i/setup/bundle.sh` calls
# first; carry the GPU wheels (.cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build). ~200 s.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
PH=""; [ "${PHASES:-0}" = 1 ] && PH="--step-log-phases"   # session 73: each traced step's host ms by phase
export OMP_NUM_THREADS=2; W=~/o34; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout ${TMO:-560} taskset -c 2-5 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 \
  --concurrency ${CONC:-1 8} --fixed 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes 1 2 4 8 --sps-warmup 3 \
  --prompt-sets ${SETS:-8} --save-sps $W/out/sps_batch.json --variants none$SUF confidence$SUF $(for C in ${CAND:-confidence-rounds-hurdle}; do echo -n "$C$SUF "; done)none-again$SUF \
  --interleave ${SETS:-8} --build-rotate ${ROT:-0} --warmup-calls ${WARM:-1} --kv-cache-gib 2.5 --step-log $W/out/steps.jsonl --step-log-every ${EVERY:-2} --step-log-ledger $PH \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; xz -9 -T0 -f $W/out/steps.jsonl || gzip -f $W/out/steps.jsonl
tar -C $W -czf $OUT/run34.tar.gz out
python3 $B/paired_pool.py $W/out/bench_batch.log --engine confidence$SUF --against none-again$SUF --drop-every ${EVERY:-2} --split-drafted | grep -v "| none$SUF |"
for C in ${CAND:-confidence-rounds-hurdle}; do   # (session 74: one line per candidate; two names broke the pooling)
  python3 $B/paired_pool.py $W/out/bench_batch.log --engine $C$SUF --against confidence$SUF --drop-every ${EVERY:-2} | tail -3
done
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-300
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
