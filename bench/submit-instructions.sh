#!/usr/bin/env bash
# Instructions per submit, per wait and per outcome (bench/submit-instructions.ts) for each built checkout named,
# under callgrind: each part at N1 and N2 runs (default 100 and 400) after WARMUP uncounted runs (default 50),
# JOBS processes at a time (default 3).
# Prints each count, then per checkout: submit = submit(N2)-submit(N1) over N2-N1; with STEPS (default 1) step runs,
# wait = wait - end and outcome = all - wait, the same way.
set -euo pipefail
[ "$#" -ge 1 ] || { echo "usage: bash bench/submit-instructions.sh <built checkout>..."; exit 2; }
N1="${N1:-100}" N2="${N2:-400}" STEPS="${STEPS:-1}" JOBS="${JOBS:-3}" WARMUP="${WARMUP:-50}"
out="$(mktemp -d)"
npx esbuild bench/submit-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/submit-instructions.mjs --log-level=warning
one() { # checkout index, part, N
  local dir="$1" i="$2" part="$3" n="$4"
  PART="$part" N="$n" STEPS="$STEPS" WARMUP="$WARMUP" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    node --single-threaded --no-concurrent-recompilation bench/.out/submit-instructions.mjs "$dir" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' >"$out/$i-$part-$n"
  echo "$dir $part N=$n: $(cat "$out/$i-$part-$n")"
}
export -f one; export STEPS WARMUP out
i=0
for dir in "$@"; do
  for part in submit all wait end; do for n in "$N1" "$N2"; do echo "$dir $i $part $n"; done; done
  i=$((i + 1))
done | xargs -P "$JOBS" -L 1 bash -c 'one "$@"' _
i=0
for dir in "$@"; do
  per() { echo $(( ($(cat "$out/$i-$1-$N2") - $(cat "$out/$i-$1-$N1")) / (N2 - N1) )); }
  s=$(per submit) a=$(per all) w=$(per wait) e=$(per end)
  echo "$dir: per submit $s, per wait $((w - e)), per outcome $((a - w)) instructions (runs of $STEPS steps: all $a, wait $w, end $e per run)"
  i=$((i + 1))
done
rm -rf "$out"
