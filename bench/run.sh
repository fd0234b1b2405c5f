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
go test -run XXX -bench 'StepByHistory' -benchmem -benchtime 50x -count "$count" ./bench | tee -a "$out/cairn.txt"
# Cold and warm resumes at 10 / 1,000 / 10,000 messages (histories rotate; a fixed count).
go test -run XXX -bench ColdResume -benchmem -benchtime 100x -count 3 ./bench | tee -a "$out/cairn.txt"
# Under load: a separate cairn serve per cell and a load generator, every store.
go run ./bench/load -runs "${LOAD_RUNS:-3}" | tee "$out/load.txt"
# End to end against ADK-Go's REST server: the whole approval cycle over
# HTTP, one fake model, systems alternated, ratios against the goals.
go run ./bench/server -runs "${SERVER_RUNS:-6}" | tee "$out/server.txt"
# At N paused sessions (SCALE_N=1000000 for a million), on each store: listings
# at depth, restart, RSS, bytes per session, and a retention sweep of N
# completed sessions under 64 clients' approval cycle.
go run ./bench/scale -n "${SCALE_N:-100000}" | tee "$out/scale.txt"
go run ./bench/scale -n "${SCALE_N:-100000}" -store postgres | tee -a "$out/scale.txt"
# SSE fan-out: one turn followed by 1/10/100/1000 clients.
go test -run XXX -bench SSEFanout -benchtime 200x -count "$count" ./server | tee "$out/sse.txt"
files=("cairn=$out/cairn.txt")
# The peers live in their own module, so the main module never depends on them.
for peer in eino adkgo; do
  (cd bench/peers && go test -run XXX -bench 'Turn|PauseResume' -benchmem -count "$count" "./$peer") | tee "$out/$peer.txt"
  files+=("$peer=$out/$peer.txt")
done
(cd bench/peers-js && npm ci --silent --no-audit --no-fund)
for peer in openai-agents langgraph; do
  (cd bench/peers-js && COUNT="$count" PEER="$peer" node run.mjs) | tee "$out/$peer.txt"
  files+=("$peer=$out/$peer.txt")
done
# Medians side by side; the "vs base" columns are each peer against Cairn.
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da -ignore pkg,goos,goarch,cpu -filter '.unit:(sec/op OR B/op OR allocs/op)' "${files[@]}"
