#!/usr/bin/env bash
# Side-by-side speed of pipetrain and numpy/PyTorch on OpenBLAS, on this machine,
# in one run. Installs Debian's python3-torch, python3-numpy and
# libopenblas0-pthread when missing. Not part of CI.
#
#   bash bench/run.sh DATA_DIR [all|matmul|mnist]   # DATA_DIR holds the MNIST IDX files
#   ROUNDS=N sets how many times each MNIST configuration runs (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: bash bench/run.sh DATA_DIR [all|matmul|mnist]}
what=${2:-all}
py=/usr/bin/python3

if ! $py -c "import torch, numpy" 2>/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch python3-numpy libopenblas0-pthread
fi
# The machine sets these for old OpenBLAS builds; they slow a current one. Unset
# them for the reference only.
ref() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

if [ "$what" != mnist ]; then
echo "== float32 matmul, GFLOP/s (median of 5 go runs; numpy: median of 7 timings)"
bench=$(go test -run '^$' -bench '^BenchmarkMatMul$' -count 5 ./ops/ | grep GFLOP)
np1=$(ref OPENBLAS_NUM_THREADS=1 $py bench/matmul_numpy.py)
np2=$(ref OPENBLAS_NUM_THREADS=2 $py bench/matmul_numpy.py)
printf "%-16s %10s %10s %10s %8s\n" shape pipetrain numpy-1t numpy-2t ratio
logsum=0; count=0
for shape in 128x784x512 128x512x256 128x1024x1024 1024x1024x1024; do
	ours=$(echo "$bench" | grep "/$shape-" | awk '{for(i=1;i<=NF;i++) if($(i+1)=="GFLOP/s") print $i}' | median)
	n1=$(echo "$np1" | awk -v s=$shape '$1==s {print $2}')
	n2=$(echo "$np2" | awk -v s=$shape '$1==s {print $2}')
	best=$(awk -v a=$n1 -v b=$n2 'BEGIN {print (a>b)?a:b}')
	ratio=$(awk -v a=$ours -v b=$best 'BEGIN {printf "%.2f", a/b}')
	logsum=$(awk -v s=$logsum -v r=$ratio 'BEGIN {print s+log(r)}'); count=$((count+1))
	printf "%-16s %10s %10s %10s %7sx\n" $shape $ours $n1 $n2 $ratio
done
awk -v s=$logsum -v n=$count 'BEGIN {printf "geometric mean of the ratios: %.2fx\n", exp(s/n)}'
fi
[ "$what" = matmul ] && exit 0

rounds=${ROUNDS:-5}
echo "== MNIST 784-512-256-10, batch 128, SGD momentum 0.9, one epoch of the real data"
echo "   ($rounds rounds, each running every configuration once, in turn; medians)"
go build -o /tmp/pipetrain-bench-train ./cmd/train
go build -o /tmp/pipetrain-bench-epochrate ./bench/epochrate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# schedule, micro_batches, stages, split_backward
configs=("sequential 1 1 false" "sequential 1 0 false" "1f1b 4 0 false" "1f1b 4 0 true" "1f1b 2 0 true" "auto auto 0 false")
for r in $(seq "$rounds"); do
	for c in "${configs[@]}"; do
		set -- $c
		dir="$tmp/logs-$r-$1-$2-$3-$4"
		/tmp/pipetrain-bench-train --config configs/mnist.toml --log-format json \
			--set data.path="$data" --set data.download=false --set train.epochs=1 \
			--set pipeline.schedule=$1 --set pipeline.micro_batches=$2 --set pipeline.stages=$3 \
			--set pipeline.split_backward=$4 \
			--set log.every=10 --set log.dir="$dir" --set train.checkpoint_dir="$tmp/ck" 2>/dev/null
		/tmp/pipetrain-bench-epochrate "$dir"/*.jsonl >>"$tmp/pt-$1-$2-$3-$4"
	done
	for t in 1 2; do
		# Passive OpenMP waits: spinning threads make two threads slower than one here.
		ref env OMP_WAIT_POLICY=PASSIVE $py bench/mnist_torch.py "$data" $t | awk '{print $1}' >>"$tmp/torch-$t"
	done
done
best_pt=0; best_torch=0
for c in "${configs[@]}"; do
	set -- $c
	m=$(median <"$tmp/pt-$1-$2-$3-$4")
	printf "pipetrain %-10s micro_batches=%-4s stages=%s split_backward=%-5s: %6s samples/s  (runs: %s)\n" $1 $2 $3 $4 $m "$(tr '\n' ' ' <"$tmp/pt-$1-$2-$3-$4")"
	best_pt=$(awk -v a=$best_pt -v b=$m 'BEGIN {print (b>a)?b:a}')
done
for t in 1 2; do
	m=$(median <"$tmp/torch-$t")
	printf "pytorch   %s thread(s):                       %6s samples/s  (runs: %s)\n" $t $m "$(tr '\n' ' ' <"$tmp/torch-$t")"
	best_torch=$(awk -v a=$best_torch -v b=$m 'BEGIN {print (b>a)?b:a}')
done
awk -v a=$best_pt -v b=$best_torch 'BEGIN {printf "best pipetrain / best pytorch: %d / %d = %.2fx\n", a, b, a/b}'
# The machine's speed drifts between rounds; a ratio taken within each round
# cancels the drift that falls on both sides, so give its median too.
torch_best=$(paste "$tmp/torch-1" "$tmp/torch-2" | awk '{print ($1>$2)?$1:$2}')
per_round() { # per round: the given pipetrain figures over PyTorch's best
	paste "$@" | awk '{m=0; for (i=1;i<=NF;i++) if ($i>m) m=$i; print m}' | paste - <(echo "$torch_best") | awk '{printf "%.2f\n", $1/$2}'
}
r=$(per_round "$tmp"/pt-*)
printf "per round, best pipetrain / best pytorch: median %sx  (rounds: %s)\n" "$(median <<<"$r")" "$(tr '\n' ' ' <<<"$r")"
for s in false true; do
	r=$(per_round "$tmp/pt-1f1b-4-0-$s")
	printf "per round, 1f1b micro_batches=4 stages=0 split_backward=%-5s / best pytorch: median %sx  (rounds: %s)\n" $s "$(median <<<"$r")" "$(tr '\n' ' ' <<<"$r")"
done
