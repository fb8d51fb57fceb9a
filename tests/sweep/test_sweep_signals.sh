#!/usr/bin/env bash
# ctest: a local sweep under signals and launched twice at once (issue 20).
#  1. SIGTERM to the sweep's process alone: it forwards the signal, its jobs stop at a checkpoint, it exits 143, the
#     manifest says `interrupted`, and no job process is left running.
#  2. Two launches of the same sweep at once resume the jobs, and every job is trained exactly once (each job's log
#     holds one start from step 1 and one resume, from whichever launcher took its lock).
#   test_sweep_signals.sh ICLAB_BINARY SOURCE_DIR
set -euo pipefail
iclab=$1; cd "$2"
tmp=$(mktemp -d); trap "rm -rf \"$tmp\"" EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Long enough to be interrupted mid-run on a fast machine: about 20 s per job with one thread on a Zen 3 core (2000
# steps took 2 s there, and a job finished before the signal).
tiny=(configs/quick/induction_head.yaml train.steps=20000 train.warmup_steps=2 eval.every=10000 task.seq_len=16
      eval.sequences=8 train.batch_size=4 seed=0,1 "output.dir=$tmp/out")

"$iclab" run -m "${tiny[@]}" --jobs 2 --threads 1 >"$tmp/first.out" 2>"$tmp/first.err" &
pid=$!
for _ in $(seq 1 600); do  # both jobs started training (their run folders hold a config)
  [ "$(find "$tmp/out" -name config.yaml 2>/dev/null | wc -l)" -eq 2 ] && break; sleep 0.1
done
sleep 1
kill -TERM "$pid"
set +e; wait "$pid"; status=$?; set -e
[ $status -eq 143 ] || fail "the interrupted sweep exited $status, expected 143: $(cat "$tmp/first.err")"
grep -q "sweep interrupted by SIGTERM" "$tmp/first.err" || fail "no interruption message: $(cat "$tmp/first.err")"
sweep=$(find "$tmp/out/sweeps" -mindepth 1 -maxdepth 1 -type d)
[ "$(grep -c ',interrupted,143,' "$sweep/manifest.csv")" -eq 2 ] || fail "manifest: $(cat "$sweep/manifest.csv")"
[ "$(find "$sweep" -name checkpoint.h5 | wc -l)" -eq 2 ] || fail "not every job left a checkpoint"
[ "$(find "$sweep" -name results.h5 | wc -l)" -eq 0 ] || fail "an interrupted job wrote results"
if pgrep -f -- "output.dir=\"$sweep\"" >/dev/null; then fail "a job process outlived the sweep"; fi

"$iclab" run -m "${tiny[@]}" --jobs 2 --threads 1 >"$tmp/a.out" 2>"$tmp/a.err" & a=$!
"$iclab" run -m "${tiny[@]}" --jobs 2 --threads 1 >"$tmp/b.out" 2>"$tmp/b.err" & b=$!
wait $a || fail "launcher A: $(cat "$tmp/a.err")"
wait $b || fail "launcher B: $(cat "$tmp/b.err")"
[ "$(find "$sweep" -name results.h5 | wc -l)" -eq 2 ] || fail "not every job finished"
[ "$(grep -c ',done,0,' "$sweep/manifest.csv")" -eq 2 ] || fail "manifest: $(cat "$sweep/manifest.csv")"
for log in "$sweep"/logs/*.log; do
  [ "$(grep -c '^\$ ' "$log")" -eq 2 ] || fail "$log: $(grep -c '^\$ ' "$log") starts, expected 2 (the first and one resume)"
  [ "$(grep -c "^\$ .* run --resume " "$log")" -eq 1 ] || fail "$log: expected one resume: $(cat "$log")"
done
echo "sweep signals: SIGTERM -> exit 143, 2 jobs interrupted at a checkpoint; 2 launchers at once resumed each job once"
