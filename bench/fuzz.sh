#!/usr/bin/env bash
# Runs every fuzz target for a bounded time each (default 60s; not in CI).
# A crasher the fuzzer finds lands in the package's testdata/fuzz/<target>/,
# where plain `go test` replays it from then on: commit it with the fix.
#   bash bench/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-60}s
status=0
for target in \
	./dataset/:FuzzParseCSV \
	./dataset/:FuzzReadIDX \
	./dataset/:FuzzLoadInputs \
	./cmd/train/:FuzzReadPNG \
	./cmd/train/internal/config/:FuzzParse \
	./internal/checkpoint/:FuzzReadState \
	./internal/checkpoint/:FuzzDecode; do
	pkg=${target%%:*} name=${target##*:}
	echo "== $name ($pkg, $t)"
	out=$(mktemp)
	if go test -run "^$name\$" -fuzz "^$name\$" -fuzztime "$t" "$pkg" >"$out" 2>&1; then
		tail -1 "$out"
	elif grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input' "$out"; then
		# go test ends this way when the time runs out while it is still
		# replaying the corpus: no finding, only too little time
		echo "ran out of time while warming up: give it more than $t"
	else
		grep -v '^fuzz: elapsed' "$out" # the failing input and where it was saved
		status=1
	fi
	rm -f "$out"
done
exit $status
