#!/usr/bin/env bash
# Mutation testing of the engine and queue with StrykerJS (not part of CI:
# a full run takes hours on a small machine). Scope each run:
#
#   scripts/mutation.sh "runtime/engine/wal-format.ts runtime/engine/segment-format.ts" "test/engine/formats.test.ts"
#
# $1: the files to mutate (space-separated; default: all of runtime/engine and runtime/queue)
# $2: the test files that may kill them (space-separated globs; default: test/engine and test/queue)
# MUTATION_CONCURRENCY (default 1) and MUTATION_TIMEOUT_MINUTES (default 30) bound the run.
# MUTATION_NAME (optional) names the run: its reports go to reports/mutation/NAME.{json,html}
# and Stryker runs in incremental mode against reports/mutation/NAME.incremental.json, so a
# second run of the same portion (after new tests) only re-tests the mutants that changed.
# A named run also records each mutant's result as it is tested (reports/mutation/NAME.events/,
# one *-onMutantTested.json per mutant), so a run the time limit stops still leaves what it measured.
# (The TypeScript 7 compiler has no JS API, so Stryker's tsconfig rewriting is off: stryker.config.json names no tsconfig.)
# The report is written to reports/mutation/ (text summary on stdout, HTML and JSON beside it).
set -euo pipefail
cd "$(dirname "$0")/.."
mutate="${1:-runtime/engine/*.ts runtime/queue/*.ts}"
export MUTATION_TESTS="${2:-test/engine/**/*.test.ts test/queue/**/*.test.ts}"
# Stryker takes one comma-separated --mutate list.
list="$(echo $mutate | tr ' ' ',')"
config=stryker.config.json
extra=()
if [ -n "${MUTATION_NAME:-}" ]; then
  out="reports/mutation/${MUTATION_NAME}"
  mkdir -p reports/mutation
  config="$out.stryker.json"
  node -e '
    const [base, out] = process.argv.slice(1);
    const c = JSON.parse(require("node:fs").readFileSync(base, "utf8"));
    delete c.$schema;
    c.jsonReporter = { fileName: out + ".json" };
    c.htmlReporter = { fileName: out + ".html" };
    c.reporters = [...c.reporters, "event-recorder"];
    c.eventReporter = { baseDir: out + ".events" };
    require("node:fs").writeFileSync(out + ".stryker.json", JSON.stringify(c, null, 2));
  ' stryker.config.json "$out"
  extra=(--incremental --incrementalFile "$out.incremental.json")
fi
exec timeout "$(( ${MUTATION_TIMEOUT_MINUTES:-30} * 60 ))" npx stryker run "$config" \
  --concurrency "${MUTATION_CONCURRENCY:-1}" --mutate "$list" "${extra[@]}"
