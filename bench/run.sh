#!/usr/bin/env bash
# MNIST MLP 784-512-256-10 training speed, pipetrain against PyTorch, side by
# side on this machine: batch 128, SGD momentum 0.9, one epoch of the real
# data, in interleaved rounds (each round runs every configuration once, in
# turn); medians. Not part of CI.
#
#   bash bench/run.sh DATA_DIR [ROUNDS]     # DATA_DIR holds the MNIST IDX files; ROUNDS default 5
#   bash bench/run.sh DATA_DIR ROUNDS matmul  # float32 GEMM at the MLP's shapes instead, against numpy
#
# One core against one core: pipetrain with GOMAXPROCS=1; PyTorch with one
# thread and OPENBLAS_NUM_THREADS=1 (else its BLAS uses every core). Then the
# best configuration of each on every core. Figures are samples/s; "share"
# is the step's 2.41 MFLOP a sample over the FMA peak measured in the same run.
# The -bf16 rows run with train.precision = "bf16" (bf16 products), and
# PyTorch's under torch.autocast("cpu", dtype=torch.bfloat16); the -rep2
# rows with pipeline.replicas = 2.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/reference.sh
data=$(cd "${1:?usage: bash bench/run.sh DATA_DIR [ROUNDS] [matmul]}" && pwd)
rounds=${2:-5}
start

if [ "${3:-}" = matmul ]; then
	echo "== float32 matmul, GFLOP/s (median of 5 go runs; numpy: median of 7 timings)"
	bench=$(go test -run '^$' -bench '^BenchmarkMatMul$' -count 5 ./ops/ | grep GFLOP)
	np1=$(ref OPENBLAS_NUM_THREADS=1 $py bench/matmul_numpy.py)
	np2=$(ref $py bench/matmul_numpy.py)
	printf "%-16s %10s %10s %10s %8s\n" shape pipetrain numpy-1t numpy-all ratio
	for shape in 128x784x512 128x512x256 128x1024x1024 1024x1024x1024; do
		ours=$(echo "$bench" | grep "/$shape-" | awk '{for(i=1;i<=NF;i++) if($(i+1)=="GFLOP/s") print $i}' | median)
		n1=$(echo "$np1" | awk -v s=$shape '$1==s {print $2}')
		n2=$(echo "$np2" | awk -v s=$shape '$1==s {print $2}')
		printf "%-16s %10s %10s %10s %7.2fx\n" $shape $ours $n1 $n2 "$(awk -v a=$ours -v b=$n1 -v c=$n2 'BEGIN {print a/((b>c)?b:c)}')"
	done
	exit 0
fi

build_train
echo "$peakout" >"$tmp/peak"
# name, GOMAXPROCS (empty: all), schedule, micro_batches, stages, split_backward, train.precision, replicas
ours=("pt-1core 1 sequential 1 1 false fp32 1" "pt-seq '' sequential 1 1 false fp32 1" "pt-auto '' auto auto 0 false fp32 1"
	"pt-1f1b '' 1f1b 4 0 false fp32 1" "pt-1f1b-split '' 1f1b 4 0 true fp32 1" "pt-rep2 '' sequential 1 1 false fp32 2"
	"pt-1core-bf16 1 sequential 1 1 false bf16 1" "pt-seq-bf16 '' sequential 1 1 false bf16 1" "pt-rep2-bf16 '' sequential 1 1 false bf16 2")
# name, torch threads, OPENBLAS_NUM_THREADS (empty: its default, every core), precision (bf16: autocast)
theirs=("torch-1core 1 1 fp32" "torch-t1 1 '' fp32" "torch-t2 2 '' fp32" "torch-1core-bf16 1 1 bf16" "torch-t2-bf16 2 '' bf16")
for r in $(seq "$rounds"); do
	for c in "${ours[@]}"; do
		eval set -- $c
		train_run $r $1 "$2" configs/mnist.toml --set train.epochs=1 \
			--set pipeline.schedule=$3 --set pipeline.micro_batches=$4 --set pipeline.stages=$5 \
			--set pipeline.split_backward=$6 --set train.precision=$7 --set pipeline.replicas=$8
	done
	for c in "${theirs[@]}"; do
		eval set -- $c
		ref ${3:+OPENBLAS_NUM_THREADS=$3} $py bench/mnist_torch.py "$data" "$2" "$4" | awk '{print $1}' >>"$tmp/$1"
	done
	echo "round $r: $(latest '' "${ours[@]}" "${theirs[@]}")" >&2
done

peak1=$(awk '/^AVX/ {print $4; exit}' "$tmp/peak")
peakn=$(awk '/^AVX/ {print $8; exit}' "$tmp/peak")
echo "== samples/s, medians of $rounds rounds (the runs in brackets)"
medians "%-14s %7.0f" '' "${ours[@]}" "${theirs[@]}"
p1=$(m pt-1core); t1=$(m torch-1core)
pb=$(best pt-seq pt-auto pt-1f1b pt-1f1b-split pt-rep2); tb=$(best torch-t1 torch-t2)
awk -v p=$p1 -v t=$t1 -v pk=$peak1 'BEGIN {printf "one core:   pipetrain %.0f, PyTorch %.0f: %.2fx; pipetrain at %.0f%% of the one-core peak (%s GFLOP/s)\n", p, t, p/t, 100*p*2.41e6/(pk*1e9), pk}'
awk -v p=$pb -v t=$tb -v pk=$peakn 'BEGIN {printf "best each:  pipetrain %.0f, PyTorch %.0f: %.2fx; pipetrain at %.0f%% of the all-core peak (%s GFLOP/s)\n", p, t, p/t, 100*p*2.41e6/(pk*1e9), pk}'
# The machine drifts between rounds; a ratio within each round cancels the
# drift that falls on both sides.
per_round() { paste "$tmp/$1" "$tmp/$2" | awk '{printf "%.2f\n", $1/$2}'; }
printf "per round, one core: median %.2fx\n" "$(per_round pt-1core torch-1core | median)"
paste "$tmp/pt-seq" "$tmp/pt-auto" "$tmp/pt-1f1b" "$tmp/pt-1f1b-split" "$tmp/pt-rep2" | awk '{m=0; for (i=1;i<=NF;i++) if ($i>m) m=$i; print m}' >"$tmp/pt-best"
paste "$tmp/torch-t1" "$tmp/torch-t2" | awk '{print ($1>$2)?$1:$2}' >"$tmp/torch-best"
printf "per round, best each: median %.2fx\n" "$(per_round pt-best torch-best | median)"
# Two cores against one, each pipetrain's best fp32 configuration.
awk -v b=$pb -v o="$(best pt-1core)" 'BEGIN {printf "pipetrain best two-core %.0f against best one-core %.0f: %.2fx\n", b, o, b/o}'
# bf16: against PyTorch's best in either precision (autocast bf16 or fp32).
tbb=$(best torch-t1 torch-t2 torch-1core-bf16 torch-t2-bf16); pbb=$(best pt-seq-bf16 pt-rep2-bf16)
awk -v p="$(m pt-1core-bf16)" -v q="$p1" -v b=$pbb -v f=$pb -v t=$tbb 'BEGIN {printf "bf16: one core %.2fx its fp32, best two-core %.2fx its fp32 best; %.2fx PyTorch'"'"'s best of fp32 and autocast bf16 (%.0f)\n", p/q, b/f, b/t, t}'
