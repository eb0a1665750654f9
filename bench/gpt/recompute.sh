#!/usr/bin/env bash
# model.recompute on the 6-block character GPT of width 192 and 6 heads at
# a context of 256 (bench/gpt/recompute.toml, batch 8, tiny Shakespeare):
# none, attention and blocks interleaved in each round, in two layouts, one
# stage under the sequential schedule and two stages under 1F1B with 4
# micro-batches. Per run: tokens/s over the steps after the first 5 (from
# the step events) and the stage events' peak_activation_bytes at the run's
# end, the largest stage's and the sum over the stages. Then medians over
# the rounds and each mode's ratios to none's. Not part of CI.
#   bash bench/gpt/recompute.sh INPUT_TXT [ROUNDS] [STEPS]     # defaults 3 and 20
set -euo pipefail
cd "$(dirname "$0")/../.."
data=$(realpath "${1:?usage: bash bench/gpt/recompute.sh INPUT_TXT [ROUNDS] [STEPS]}")
rounds=${2:-3}
steps=${3:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/train" ./cmd/train
# tokens/s of a log: the tokens of the steps after step 5's event up to
# the last one, over the time between the two events
rate() {
	python3 - "$1" <<'PY'
import datetime, json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
cfg = next(e for e in ev if e["event"] == "run_start")["config"]["data"]
steps = [(e["step"], datetime.datetime.fromisoformat(e["time"])) for e in ev if e["event"] == "step" and e["step"] >= 5]
(s0, t0), (s1, t1) = steps[0], steps[-1]
print(round((s1 - s0) * cfg["batch_size"] * cfg["block_size"] / (t1 - t0).total_seconds()))
PY
}
echo "== $(date -u '+%F %H:%M'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, Go $(go env GOVERSION), load $(cut -d' ' -f1-3 /proc/loadavg)"
# name, schedule, stages, micro_batches
layouts=("seq-1stage sequential 1 1" "1f1b-2stages 1f1b 2 4")
modes=(none attention blocks)
for r in $(seq "$rounds"); do
	for l in "${layouts[@]}"; do
		set -- $l
		for mode in "${modes[@]}"; do
			dir="$tmp/logs-$r-$1-$mode"
			"$tmp/train" --config bench/gpt/recompute.toml --log-format json --set data.path="$data" \
				--set model.recompute=$mode --set pipeline.schedule=$2 --set pipeline.stages=$3 \
				--set pipeline.micro_batches=$4 --set train.max_steps="$steps" --set log.every=1 \
				--set log.dir="$dir" --set train.checkpoint_dir="$tmp/ck" >/dev/null 2>&1
			tps=$(rate "$dir"/*.jsonl)
			# the run's last stage events, one per stage actor
			peaks=$(grep -h '"event":"stage"' "$dir"/*.jsonl | tail -n "$3" | grep -o '"peak_activation_bytes":[0-9]*' | cut -d: -f2)
			max=$(echo "$peaks" | sort -n | tail -1)
			sum=$(echo "$peaks" | awk '{s += $1} END {print s}')
			echo "$1 $mode $tps $max $sum" | tee -a "$tmp/runs" |
				awk '{printf "round '"$r"': %-12s %-9s %6d tokens/s, peak activations %7.1f MB (largest stage), %7.1f MB (all stages)\n", $1, $2, $3, $4/1e6, $5/1e6}'
		done
	done
	echo "(load $(cut -d' ' -f1 /proc/loadavg))"
done
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
echo "== medians of $rounds rounds; ratios to none's"
for l in "${layouts[@]}"; do
	set -- $l
	for mode in "${modes[@]}"; do
		for f in 3 4 5; do
			awk -v l=$1 -v m=$mode -v f=$f '$1 == l && $2 == m {print $f}' "$tmp/runs" | median >"$tmp/med-$f"
		done
		[ $mode = none ] && { read -r t0 <"$tmp/med-3"; read -r p0 <"$tmp/med-4"; read -r s0 <"$tmp/med-5"; }
		read -r t <"$tmp/med-3"; read -r p <"$tmp/med-4"; read -r s <"$tmp/med-5"
		awk -v l=$1 -v m=$mode -v t=$t -v p=$p -v s=$s -v t0=$t0 -v p0=$p0 -v s0=$s0 'BEGIN {
			printf "%-12s %-9s %6.0f tokens/s (%.2fx), peak %7.1f MB largest stage (%.3f), %7.1f MB all stages (%.3f)\n",
				l, m, t, t/t0, p/1e6, p/p0, s/1e6, s/s0 }'
	done
done
