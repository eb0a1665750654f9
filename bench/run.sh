#!/usr/bin/env bash
# Side-by-side speed of pipetrain and numpy/PyTorch on OpenBLAS, on this machine,
# in one run. Installs Debian's python3-torch, python3-numpy and
# libopenblas0-pthread when missing. Not part of CI.
#
#   bash bench/run.sh [DATA_DIR]     # DATA_DIR holds the MNIST IDX files
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/data/mnist}
py=/usr/bin/python3

if ! $py -c "import torch, numpy" 2>/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch python3-numpy libopenblas0-pthread
fi
# The machine sets these for old OpenBLAS builds; they slow a current one. Unset
# them for the reference only.
ref() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

echo "== float32 matmul, GFLOP/s (median of 5 go runs; numpy: median of 7 timings)"
bench=$(go test -run '^$' -bench 'BenchmarkMatMul' -count 5 ./ops/ | grep GFLOP)
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

echo "== MNIST 784-512-256-10, batch 128, SGD momentum 0.9, one epoch of the real data"
go build -o /tmp/pipetrain-bench-train ./cmd/train
tmp=$(mktemp -d)
for sched in sequential 1f1b; do
	for micro in 1 2; do
		/tmp/pipetrain-bench-train --config configs/mnist.toml --log-format json \
			--set data.path="$data" --set data.download=false --set train.epochs=1 \
			--set pipeline.schedule=$sched --set pipeline.micro_batches=$micro \
			--set log.every=1 --set log.dir="$tmp/logs-$sched-$micro" --set train.checkpoint_dir="$tmp/ck" 2>/dev/null
		sps=$(go run ./bench/epochrate "$tmp/logs-$sched-$micro"/*.jsonl)
		echo "pipetrain $sched micro_batches=$micro: $sps samples/s"
	done
done
echo "pytorch (2 threads): $(ref $py bench/mnist_torch.py "$data" 2)"
echo "pytorch (1 thread):  $(ref $py bench/mnist_torch.py "$data" 1)"
rm -rf "$tmp"
