#!/usr/bin/env bash
# ctest: the Slurm launcher cannot be made to run anything but iclab (issue 20). Hostile values — quotes, $(),
# backticks, ';', newlines — in every field that reaches the generated script (output.dir on the command line and in
# a sweep file's overrides, --partition, --time, --name, the sweep file's name) either are refused with exit 2 and
# nothing written, or reach the script shell-quoted: `bash -n` accepts it, and a stub `sbatch` that executes every
# array task of it trains the jobs and nothing else (no marker file of any payload appears).
#   test_slurm_injection.sh ICLAB_BINARY SOURCE_DIR
set -euo pipefail
iclab=$1; cd "$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
marks="$tmp/marks"; mkdir -p "$marks" "$tmp/bin"
# The stub: records its argv and working folder, then runs every array task of the script it is given, as Slurm would.
cat > "$tmp/bin/sbatch" <<STUB
#!/usr/bin/env bash
printf '%s\n' "\$PWD" "\$@" > "$tmp/sbatch_call"
script=\${@: -1}
bash -n "\$script" || exit 3
last=\$(sed -n 's/^#SBATCH --array=0-\([0-9]*\)$/\1/p' "\$script")
for i in \$(seq 0 "\$last"); do SLURM_ARRAY_TASK_ID=\$i bash "\$script" >/dev/null 2>&1 || exit 4; done
echo 4242
STUB
chmod +x "$tmp/bin/sbatch"
tiny=(configs/quick/induction_head.yaml train.steps=12 train.warmup_steps=2 eval.every=6 task.seq_len=16 eval.sequences=8
      train.batch_size=4 seed=0,1)
fail() { echo "FAIL: $*" >&2; exit 1; }
no_marks() { [ -z "$(ls -A "$marks")" ] || fail "a payload ran: $(ls "$marks")"; }

# 1. Accepted values: quoted into the script, which runs iclab only.
n=0
for dir in "o'\$(touch $marks/dollar)'" "o\`touch $marks/backtick\`" "o;touch $marks/semicolon;" "q';touch $marks/quote;'" \
           "o\"\$(touch $marks/dq)\"" "o'\\''\$(touch $marks/escaped)" "with space & \$HOME"; do
  n=$((n + 1)); out="$tmp/case$n/$dir"
  rm -f "$tmp/sbatch_call"
  sweep=$(PATH="$tmp/bin:$PATH" "$iclab" run -m "${tiny[@]}" "output.dir=\"$(printf '%s' "$out" | sed 's/\\/\\\\/g; s/"/\\"/g')\"" \
          --launcher slurm --partition debug --time 0-00:05:00 --quiet 2>"$tmp/err" | tail -n 1) || fail "case $n exit $?: $(cat "$tmp/err")"
  [ -f "$sweep/slurm/array.sbatch" ] || fail "case $n: no script under $sweep"
  bash -n "$sweep/slurm/array.sbatch" || fail "case $n: bash -n"
  [ "$(sed -n 1p "$tmp/sbatch_call")" = "$sweep" ] || fail "case $n: sbatch ran in $(sed -n 1p "$tmp/sbatch_call")"
  [ "$(sed -n '2,$p' "$tmp/sbatch_call" | tr '\n' ' ')" = "--parsable slurm/array.sbatch " ] || fail "case $n: sbatch argv"
  [ "$(find "$sweep" -mindepth 2 -maxdepth 2 -name results.h5 | wc -l)" -eq 2 ] || fail "case $n: the jobs did not run"
  no_marks
done

# The same through a sweep file's overrides.
printf 'config: configs/quick/induction_head.yaml\noverrides: ["output.dir=%s", train.steps=12, train.warmup_steps=2, eval.every=6, task.seq_len=16, eval.sequences=8, train.batch_size=4]\ngrid: {seed: [0, 1]}\n' \
  "$tmp/file/x'\$(touch $marks/file)'" > "$tmp/s.yaml"
sweep=$(PATH="$tmp/bin:$PATH" "$iclab" sweep "$tmp/s.yaml" --launcher slurm --quiet 2>"$tmp/err" | tail -n 1) || fail "sweep file: $(cat "$tmp/err")"
[ "$(find "$sweep" -mindepth 2 -maxdepth 2 -name results.h5 | wc -l)" -eq 2 ] || fail "sweep file: the jobs did not run"
no_marks

# 2. Refused values: exit 2, sbatch never called, nothing written.
refuse() {
  local what=$1; shift
  rm -f "$tmp/sbatch_call"; rm -rf "$tmp/refused"
  set +e; PATH="$tmp/bin:$PATH" "$iclab" "$@" >/dev/null 2>"$tmp/err"; local status=$?; set -e
  [ $status -eq 2 ] || fail "$what: exit $status, expected 2 ($(cat "$tmp/err"))"
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "$what: expected a one-line message, got: $(cat "$tmp/err")"
  [ ! -e "$tmp/sbatch_call" ] || fail "$what: sbatch was called"
  [ ! -e "$tmp/refused" ] || fail "$what: $tmp/refused was written"
  no_marks
}
o="output.dir=$tmp/refused"
refuse "newline in output.dir" run -m "${tiny[@]}" "output.dir=\"$tmp/refused/a\\ntouch $marks/nl\"" --launcher slurm
refuse "payload in --partition" run -m "${tiny[@]}" "$o" --launcher slurm --partition "p;touch $marks/p"
refuse "newline in --partition" run -m "${tiny[@]}" "$o" --launcher slurm --partition "$(printf 'p\n#SBATCH --wrap=touch %s/w' "$marks")"
refuse "payload in --time" run -m "${tiny[@]}" "$o" --launcher slurm --time "\$(touch $marks/t)"
refuse "newline in --time" run -m "${tiny[@]}" "$o" --launcher slurm --time "$(printf '1:00\ntouch %s/t2' "$marks")"
refuse "payload in --name" run -m "${tiny[@]}" "$o" --launcher slurm --name "x'\$(touch $marks/n)'"
refuse "dot-dot --name" run -m "${tiny[@]}" "$o" --launcher slurm --name ..
printf 'name: "a\\nb"\nconfig: configs/quick/induction_head.yaml\noverrides: [output.dir=%s]\ngrid: {seed: [0, 1]}\n' "$tmp/refused" > "$tmp/bad.yaml"
refuse "newline in a sweep file's name" sweep "$tmp/bad.yaml" --launcher slurm

# 3. Without sbatch (no stub on PATH): a clear failure, and still nothing but iclab ran.
mkdir -p "$tmp/empty_path"  # no sbatch anywhere, even where a real cluster is installed
set +e; PATH="$tmp/empty_path" "$iclab" run -m "${tiny[@]}" "output.dir=$tmp/nosbatch/q';touch $marks/nosbatch;'" --launcher slurm \
  >/dev/null 2>"$tmp/err"; status=$?; set -e
[ $status -eq 1 ] && grep -q "is sbatch on PATH" "$tmp/err" || fail "no sbatch: exit $status, $(cat "$tmp/err")"
no_marks
echo "slurm injection: $n accepted hostile output.dir values ran iclab only; 8 hostile values refused with exit 2"
