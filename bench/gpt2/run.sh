#!/usr/bin/env bash
# GPT-2 small (configs/gpt2-small.toml: 8 x 1,024 tokens a step), pipetrain
# against PyTorch (torch_gpt2.py: nanoGPT's model, the same shape and AdamW
# step), side by side on this machine in interleaved rounds, on tiny
# Shakespeare tokenized with GPT-2's tokenizer by `train prepare`. Each run
# takes one untimed step, then TIMED steps; tokens/s over the timed ones and
# the run's peak RSS. Both accumulate the 8 sequences one at a time
# (pipetrain's micro_batches = 8, nanoGPT's gradient accumulation): 8 at
# once needs more than this machine's memory in PyTorch.
# One core against one core (GOMAXPROCS=1; PyTorch one thread, OpenBLAS on
# one), then each side's best on both cores. Not part of CI.
#   bash bench/gpt2/run.sh INPUT_TXT [ROUNDS] [TIMED] [ONLY]  # defaults 1, 3 and every configuration
# ONLY is a regular expression of the configurations' names to run, e.g. '1core'.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/reference.sh
text=$(realpath "${1:?usage: bash bench/gpt2/run.sh INPUT_TXT [ROUNDS] [TIMED] [ONLY]}")
rounds=${2:-1}
timed=${3:-3}
only=${4:-.}
start
build_train
data="$tmp/shakespeare.gpt2"
"$tmp/train" prepare --config configs/gpt2-small.toml --set data.name=text --set data.path="$text" \
	--set data.test_fraction=0.1 --out "$data"
# name, GOMAXPROCS (empty: all), micro_batches
ours=("pt-1core 1 8" "pt-2core '' 8")
# name, torch threads, OpenBLAS threads (0: its default, every core), sequences a micro-batch
theirs=("torch-1core 1 1 1" "torch-t1 1 0 1" "torch-t2 2 0 1")
pick() { for c in "$@"; do [[ ${c%% *} =~ $only ]] && printf '%s\n' "$c"; done; }
mapfile -t ours < <(pick "${ours[@]}")
mapfile -t theirs < <(pick "${theirs[@]}")
for r in $(seq "$rounds"); do
	for c in "${ours[@]}"; do
		eval set -- $c
		dir="$tmp/logs-$r-$1"
		env ${2:+GOMAXPROCS=$2} /usr/bin/time -f %M -o "$tmp/rss" "$tmp/train" --config configs/gpt2-small.toml \
			--log-format json --set data.path="$data" --set train.max_steps=$((timed + 1)) --set schedule.warmup_steps=0 \
			--set pipeline.micro_batches=$3 --set log.dir="$dir" --set train.checkpoint_dir="$tmp/ck-$r-$1" \
			--set train.eval_every=1000000 --set train.checkpoint_every=1000000 >/dev/null 2>&1
		rm -rf "$tmp/ck-$r-$1"
		# tokens/s from the first step event to the last: 8 x 1024 tokens a step
		$py -c 'import json, sys
from datetime import datetime
ts = [json.loads(l)["time"] for l in open(sys.argv[1]) if "\"event\":\"step\"" in l]
t = [datetime.fromisoformat(x[:26].rstrip("Z")) for x in ts]
print(round(8 * 1024 * (len(t) - 1) / (t[-1] - t[0]).total_seconds(), 1))' "$dir"/*.jsonl >>"$tmp/$1"
		awk '{printf "%.2f\n", $1 / 1048576}' "$tmp/rss" >>"$tmp/$1.rss"
	done
	for c in "${theirs[@]}"; do
		set -- $c
		ref $py bench/gpt2/torch_gpt2.py --data "$data/train.bin" --threads $2 --blas_threads $3 --micro $4 \
			--warmup 1 --steps "$timed" | tail -1 >"$tmp/out.json"
		$py -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["tokens_per_s"]); print(d["peak_rss_gib"], file=open(sys.argv[2], "a"))' \
			"$tmp/out.json" "$tmp/$1.rss" >>"$tmp/$1"
	done
	echo "round $r: $(latest "" "${ours[@]}" "${theirs[@]}")(load $(cut -d' ' -f1 /proc/loadavg))" >&2
done
echo "== GPT-2 small, 8 x 1024 tokens a step: tokens/s, medians of $rounds rounds (the runs in brackets); peak RSS GiB"
for c in "${ours[@]}" "${theirs[@]}"; do
	set -- $c
	printf '%-12s %7.1f  (%s)  %s GiB\n' "$1" "$(m "$1")" "$(tr '\n' ' ' <"$tmp/$1")" "$(sort -g "$tmp/$1.rss" | tail -1)"
done
ran() { for n in "$@"; do [ -s "$tmp/$n" ] && echo "$n"; done; }
if [ -s "$tmp/pt-1core" ] && [ -s "$tmp/torch-1core" ]; then
	awk -v p="$(m pt-1core)" -v t="$(m torch-1core)" 'BEGIN {printf "one core:  pipetrain %.1f, PyTorch %.1f: %.2fx\n", p, t, p/t}'
fi
if [ -n "$(ran pt-1core pt-2core)" ] && [ -n "$(ran torch-1core torch-t1 torch-t2)" ]; then
	awk -v p="$(best $(ran pt-1core pt-2core))" -v t="$(best $(ran torch-1core torch-t1 torch-t2))" \
		'BEGIN {printf "best each: pipetrain %.1f, PyTorch %.1f: %.2fx\n", p, t, p/t}'
fi
