#!/usr/bin/env bash
# model.Predict against PyTorch 1.13 inference on the MNIST MLP, batch 1
# and 256, in interleaved rounds; medians of predictions/s.
#   bash bench/inference/run.sh [ROUNDS]
set -euo pipefail
rounds=${1:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/inference" ./bench/inference)
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for r in $(seq "$rounds"); do
	for t in 1 2; do
		OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$here/torch_predict.py" "$t" >> "$tmp/results"
	done
	"$tmp/inference" >> "$tmp/results"
	echo "round $r done" >&2
done
for k in $(cut -d' ' -f1 "$tmp/results" | sort -u); do
	printf '%s %s\n' "$k" "$(grep "^$k " "$tmp/results" | cut -d' ' -f2 | median)"
done
