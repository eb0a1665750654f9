#!/usr/bin/env bash
# Two cores against one on the MNIST MLP of configs/mnist.toml: one epoch with
# GOMAXPROCS=1 and one with GOMAXPROCS=2, in pairs whose order alternates
# (one core first, then two; then two first), so that the machine's drift
# falls on both alike. Prints each pair's samples/s and their ratio, then the
# median ratio. Not part of CI.
#
#   bash bench/cores.sh DATA_DIR [PAIRS]     # DATA_DIR holds the MNIST IDX files; PAIRS default 16
set -euo pipefail
cd "$(dirname "$0")/.."
data=$(cd "${1:?usage: bash bench/cores.sh DATA_DIR [PAIRS]}" && pwd)
pairs=${2:-16}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/train" ./cmd/train
go build -o "$tmp/epochrate" ./bench/epochrate

run() { # GOMAXPROCS: prints samples/s
	local d="$tmp/run$RANDOM"
	GOMAXPROCS=$1 "$tmp/train" --config configs/mnist.toml --set data.path="$data" --set data.download=false \
		--set train.epochs=1 --set log.every=10 --set log.dir="$d" --set train.checkpoint_dir="$d/ck" >/dev/null 2>&1
	"$tmp/epochrate" "$d"/*.jsonl
	rm -rf "$d"
}

echo "== $(date -u +%F), $(go version | awk '{print $3}'), configs/mnist.toml, one epoch a run"
echo "pair  one-core  two-core  ratio"
for i in $(seq "$pairs"); do
	if [ $((i % 2)) = 1 ]; then a=$(run 1); b=$(run 2); else b=$(run 2); a=$(run 1); fi
	echo "$i $a $b" | awk '{printf "%4d %9.0f %9.0f %6.3f\n", $1, $2, $3, $3/$2}' | tee -a "$tmp/pairs"
done
awk '{print $4}' "$tmp/pairs" | sort -g | awk '{v[NR] = $1} END {
	m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	printf "two cores against one: median %.3fx over %d pairs (%.3f to %.3f)\n", m, NR, v[1], v[NR]}'
