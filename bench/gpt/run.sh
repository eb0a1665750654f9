#!/usr/bin/env bash
# The character GPT on tiny Shakespeare, pipetrain against PyTorch
# (torch_gpt.py, the same model and AdamW step), side by side on this
# machine in interleaved rounds: the recipe's model
# (configs/shakespeare-char.toml) and the larger one
# (configs/shakespeare-char-large.toml). Medians of tokens/s over TIMED
# training steps after 20 unclocked ones. One core against one core
# (GOMAXPROCS=1; PyTorch one thread with OpenBLAS on one), then each side's
# layouts on both cores. Not part of CI.
#   bash bench/gpt/run.sh INPUT_TXT [ROUNDS] [TIMED]     # defaults 3 and 40
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/reference.sh
data=$(realpath "${1:?usage: bash bench/gpt/run.sh INPUT_TXT [ROUNDS] [TIMED]}")
rounds=${2:-3}
timed=${3:-40}
start
build_train
# name, GOMAXPROCS (empty: all), schedule, micro_batches, stages (0: an actor
# per layer), split_backward; M is the preset's most micro-batches (one or two
# sequences each), tune the steps auto's tuning takes first
ours=("pt-1core 1 sequential 1 1 false" "pt-1core-pipe 1 1f1b M 0 true" "pt-seq '' sequential 1 1 false"
	"pt-1f1b '' 1f1b M 0 true" "pt-gpipe '' gpipe M 0 true" "pt-1f1b-2 '' 1f1b M 2 true" "pt-auto '' auto auto 0 false")
# name, torch threads, OpenBLAS threads (0: its default, every core)
theirs=("torch-1core 1 1" "torch-t1 1 0" "torch-t2 2 0")
declare -A config=([recipe]=configs/shakespeare-char.toml [large]=configs/shakespeare-char-large.toml)
declare -A block=([recipe]=64 [large]=128) most=([recipe]=8 [large]=16) tune=([recipe]=32 [large]=40)
for r in $(seq "$rounds"); do
	for p in recipe large; do
		for c in "${ours[@]}"; do
			eval set -- ${c/ M / ${most[$p]} }
			dir="$tmp/logs-$p-$r-$1"
			# the rate counts from step 20, for auto 20 steps after its tuning
			first=20
			[ $3 = auto ] && first=$((${tune[$p]} + 20 + 10 - ${tune[$p]} % 10))
			env ${2:+GOMAXPROCS=$2} "$tmp/train" --config "${config[$p]}" --log-format json \
				--set data.path="$data" --set data.download=false --set train.max_steps=$((timed + first)) \
				--set schedule.warmup_steps=2 --set pipeline.schedule=$3 --set pipeline.micro_batches=$4 \
				--set pipeline.stages=$5 --set pipeline.split_backward=$6 --set log.every=10 --set log.dir="$dir" \
				--set train.checkpoint_dir="$tmp/ck" --set train.eval_every=1000000 >/dev/null 2>&1
			"$tmp/epochrate" -from $first "$dir"/*.jsonl | awk -v t=${block[$p]} '{printf "%.0f\n", $1 * t}' >>"$tmp/$p-$1"
		done
		for c in "${theirs[@]}"; do
			set -- $c
			ref $py bench/gpt/torch_gpt.py --data "$data" --mode speed --preset $p --threads $2 --blas_threads $3 --timed "$timed" |
				tail -1 | $py -c 'import json, sys; print(json.load(sys.stdin)["tokens_per_s"])' >>"$tmp/$p-$1"
		done
		echo "round $r, $p: $(latest "$p-" "${ours[@]}" "${theirs[@]}")(load $(cut -d' ' -f1 /proc/loadavg))" >&2
	done
done
for p in recipe large; do
	echo "== $p: tokens/s, medians of $rounds rounds (the runs in brackets)"
	medians "%-12s %7.0f" "$p-" "${ours[@]}" "${theirs[@]}"
	awk -v p="$(best $p-pt-1core $p-pt-1core-pipe)" -v t="$(m $p-torch-1core)" 'BEGIN {printf "one core:  pipetrain %.0f, PyTorch %.0f: %.2fx\n", p, t, p/t}'
	two=$(best $p-pt-seq $p-pt-1f1b $p-pt-gpipe $p-pt-1f1b-2) one=$(best $p-pt-1core $p-pt-1core-pipe)
	awk -v p="$(best $p-pt-1core $p-pt-1core-pipe $p-pt-seq $p-pt-1f1b $p-pt-gpipe $p-pt-1f1b-2)" \
		-v t="$(best $p-torch-1core $p-torch-t1 $p-torch-t2)" 'BEGIN {printf "best each: pipetrain %.0f, PyTorch %.0f: %.2fx\n", p, t, p/t}'
	awk -v two="$two" -v one="$one" -v pipe="$(best $p-pt-1f1b $p-pt-gpipe)" -v auto="$(m $p-pt-auto)" \
		'BEGIN {printf "pipetrain: best two-core %.2fx its best one-core; pipelined (an actor per block) %.2fx, auto %.2fx its best two-core\n", two/one, pipe/two, auto/two}'
	grep -h '"event":"tune"' "$tmp"/logs-$p-*-pt-auto/*.jsonl | grep -o '"chosen":{[^}]*}' | sort | uniq -c
done
