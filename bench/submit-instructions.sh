#!/usr/bin/env bash
# Instructions per submit, per wait and per outcome (bench/submit-instructions.ts) for each built checkout named,
# under callgrind: each part at N1 and N2 runs (default 100 and 400) after WARMUP uncounted runs (default 50),
# JOBS processes at a time (default 3).
# Prints each count, then per checkout: submit = submit(N2)-submit(N1) over N2-N1; with STEPS (default 1) step runs,
# wait = wait - end and outcome = all - wait, the same way.
# With SPLIT="10 40" (two step counts) it runs only the `all` part, at each step count and N, and splits a run's
# instructions into its edges (submit, run end, wait, outcome: paid once a run) and a step's:
# per run at S steps = edges + S x step, so step = (run40 - run10) / 30 and edges = run10 - 10 x step.
# CG_DIR keeps the callgrind outputs there (for bench/callgrind-parts.ts) instead of /dev/null.
set -euo pipefail
[ "$#" -ge 1 ] || { echo "usage: bash bench/submit-instructions.sh <built checkout>..."; exit 2; }
N1="${N1:-100}" N2="${N2:-400}" STEPS="${STEPS:-1}" JOBS="${JOBS:-3}" WARMUP="${WARMUP:-50}" SPLIT="${SPLIT:-}" CG_DIR="${CG_DIR:-}"
out="$(mktemp -d)"
npx esbuild bench/submit-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/submit-instructions.mjs --log-level=warning
one() { # checkout index, part, N, steps per run
  local dir="$1" i="$2" part="$3" n="$4" steps="$5" cg=/dev/null
  [ -n "$CG_DIR" ] && cg="$CG_DIR/$i-$part-s$steps-$n.cg"
  PART="$part" N="$n" STEPS="$steps" WARMUP="$WARMUP" valgrind --tool=callgrind --callgrind-out-file="$cg" \
    node --single-threaded --no-concurrent-recompilation bench/.out/submit-instructions.mjs "$dir" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' >"$out/$i-$part-s$steps-$n"
  echo "$dir $part STEPS=$steps N=$n: $(cat "$out/$i-$part-s$steps-$n")"
}
export -f one; export WARMUP CG_DIR out
i=0
for dir in "$@"; do
  if [ -n "$SPLIT" ]; then
    for steps in $SPLIT; do for n in "$N1" "$N2"; do echo "$dir $i all $n $steps"; done; done
  else
    for part in submit all wait end; do for n in "$N1" "$N2"; do echo "$dir $i $part $n $STEPS"; done; done
  fi
  i=$((i + 1))
done | xargs -P "$JOBS" -L 1 bash -c 'one "$@"' _
if [ -n "$SPLIT" ]; then
  read -r s1 s2 <<<"$SPLIT"
  i=0
  for dir in "$@"; do
    run() { echo $(( ($(cat "$out/$i-all-s$1-$N2") - $(cat "$out/$i-all-s$1-$N1")) / (N2 - N1) )); }
    r1=$(run "$s1") r2=$(run "$s2")
    step=$(( (r2 - r1) / (s2 - s1) ))
    echo "$dir: per run of $s1 steps $r1, of $s2 steps $r2; per step $step, a run's edges $((r1 - s1 * step)) instructions"
    i=$((i + 1))
  done
  rm -rf "$out"
  exit 0
fi
i=0
for dir in "$@"; do
  per() { echo $(( ($(cat "$out/$i-$1-s$STEPS-$N2") - $(cat "$out/$i-$1-s$STEPS-$N1")) / (N2 - N1) )); }
  s=$(per submit) a=$(per all) w=$(per wait) e=$(per end)
  echo "$dir: per submit $s, per wait $((w - e)), per outcome $((a - w)) instructions (runs of $STEPS steps: all $a, wait $w, end $e per run)"
  i=$((i + 1))
done
rm -rf "$out"
