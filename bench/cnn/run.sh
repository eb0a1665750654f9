#!/usr/bin/env bash
# The issue's CNN (configs/cnn.toml) on MNIST, pipetrain against PyTorch, side
# by side on this machine, in interleaved rounds; medians of samples/s over
# STEPS training steps (after 10 unclocked ones). One core against one core
# (GOMAXPROCS=1; PyTorch one thread with OPENBLAS_NUM_THREADS=1), then the
# best configuration of each on every core; the -bf16 rows with
# train.precision = "bf16". Not part of CI.
#   bash bench/cnn/run.sh MNIST_DIR [ROUNDS] [STEPS]     # defaults 3 and 150
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/reference.sh
data=$(cd "${1:?usage: bash bench/cnn/run.sh MNIST_DIR [ROUNDS] [STEPS]}" && pwd)
rounds=${2:-3}
steps=${3:-150}
start
build_train
# name, GOMAXPROCS (empty: all), schedule, micro_batches, stages, train.precision
ours=("pt-1core 1 sequential 1 1 fp32" "pt-seq '' sequential 1 1 fp32" "pt-auto '' auto auto 0 fp32"
	"pt-seq-bf16 '' sequential 1 1 bf16" "pt-auto-bf16 '' auto auto 0 bf16")
# name, torch threads, OPENBLAS_NUM_THREADS (empty: its default, every core)
theirs=("torch-1core 1 1" "torch-t1 1 ''" "torch-t2 2 ''")
for r in $(seq "$rounds"); do
	for c in "${ours[@]}"; do
		eval set -- $c
		train_run $r $1 "$2" configs/cnn.toml --set train.max_steps=$((steps + 10)) --set train.eval_every=1000000 \
			--set pipeline.schedule=$3 --set pipeline.micro_batches=$4 --set pipeline.stages=$5 --set train.precision=$6
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
awk -v b="$(best pt-seq-bf16 pt-auto-bf16)" -v f="$(best pt-seq pt-auto)" 'BEGIN {printf "bf16: best %.0f, %.2fx the best fp32 %.0f\n", b, b/f, f}'
