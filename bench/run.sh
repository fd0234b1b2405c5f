#!/usr/bin/env bash
# Runs Cairn's benchmarks (and the peers', when their harnesses are present)
# in one go and prints medians of 5 runs side by side with benchstat.
#   bash bench/run.sh            # everything
#   COUNT=10 bash bench/run.sh   # more runs
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local
count=${COUNT:-5}
out=${OUT:-bench/results}
mkdir -p "$out"
if [ -z "${CAIRN_TEST_POSTGRES:-}" ]; then
  eval "$(.ci/postgres start)"
  trap '.ci/postgres stop' EXIT
fi
echo "machine: $(nproc) cores, $(go version), $(uname -sr)" | tee "$out/machine.txt"
# Fast benchmarks run by time; the slow ones by a fixed count of iterations.
go test -run XXX -bench 'Turn|PauseResume|Continuation' -benchmem -count "$count" ./bench | tee "$out/cairn.txt"
go test -run XXX -bench 'StepByHistory|HTTP' -benchmem -benchtime 50x -count "$count" ./bench | tee -a "$out/cairn.txt"
files=("$out/cairn.txt")
if [ -d bench/peers ] && [ -f bench/peers/go.mod ]; then
  (cd bench/peers && go test -run XXX -bench . -benchmem -count "$count" ./...) | tee "$out/peers-go.txt"
  files+=("$out/peers-go.txt")
fi
if [ -f bench/peers-js/package.json ]; then
  (cd bench/peers-js && npm ci --silent && COUNT="$count" node run.mjs) | tee "$out/peers-js.txt"
  files+=("$out/peers-js.txt")
fi
go run golang.org/x/perf/cmd/benchstat@latest "${files[@]}"
