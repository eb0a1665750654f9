#!/usr/bin/env bash
# The issue's CNN (configs/cnn.toml) on MNIST, pipetrain against PyTorch, side
# by side on this machine, in interleaved rounds; medians of samples/s over
# STEPS training steps (after 10 unclocked ones). One core against one core
# (GOMAXPROCS=1; PyTorch one thread with OPENBLAS_NUM_THREADS=1), then the
# best configuration of each on every core. Not part of CI.
#   bash bench/cnn/run.sh MNIST_DIR [ROUNDS] [STEPS]     # defaults 3 and 150
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/reference.sh
data=$(cd "${1:?usage: bash bench/cnn/run.sh MNIST_DIR [ROUNDS] [STEPS]}" && pwd)
rounds=${2:-3}
steps=${3:-150}
start
build_train
# name, GOMAXPROCS (empty: all), schedule, micro_batches, stages
ours=("pt-1core 1 sequential 1 1" "pt-seq '' sequential 1 1" "pt-auto '' auto auto 0")
# name, torch threads, OPENBLAS_NUM_THREADS (empty: its default, every core)
theirs=("torch-1core 1 1" "torch-t1 1 ''" "torch-t2 2 ''")
for r in $(seq "$rounds"); do
	for c in "${ours[@]}"; do
		eval set -- $c
		dir="$tmp/logs-$r-$1"
		env ${2:+GOMAXPROCS=$2} "$tmp/train" --config configs/cnn.toml --log-format json \
			--set data.path="$data" --set data.download=false --set train.max_steps=$((steps + 10)) \
			--set pipeline.schedule=$3 --set pipeline.micro_batches=$4 --set pipeline.stages=$5 \
			--set log.every=10 --set log.dir="$dir" --set train.checkpoint_dir="$tmp/ck" --set train.eval_every=1000000 2>/dev/null
		"$tmp/epochrate" "$dir"/*.jsonl >>"$tmp/$1"
	done
	for c in "${theirs[@]}"; do
		eval set -- $c
		ref ${3:+OPENBLAS_NUM_THREADS=$3} $py bench/cnn/torch_cnn.py "$data" "$2" $((steps + 10)) >>"$tmp/$1"
	done
	echo "round $r: $(latest '' "${ours[@]}" "${theirs[@]}")" >&2
done
echo "== samples/s, medians of $rounds rounds (the runs in brackets)"
medians "%-12s %6.0f" '' "${ours[@]}" "${theirs[@]}"
awk -v p="$(m pt-1core)" -v t="$(m torch-1core)" 'BEGIN {printf "one core:  pipetrain %.0f, PyTorch %.0f: %.2fx\n", p, t, p/t}'
awk -v p="$(best pt-seq pt-auto)" -v t="$(best torch-t1 torch-t2)" 'BEGIN {printf "best each: pipetrain %.0f, PyTorch %.0f: %.2fx\n", p, t, p/t}'
