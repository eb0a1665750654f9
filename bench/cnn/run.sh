#!/usr/bin/env bash
# One epoch of MNIST with the issue's CNN (configs/cnn.toml), pipetrain
# against PyTorch (Debian's python3-torch 1.13, 1 and 2 threads, with
# OMP_WAIT_POLICY=PASSIVE), in interleaved rounds; medians of samples/s.
# pipetrain's figure is the median of its step events after auto's tuning.
#   bash bench/cnn/run.sh MNIST_DIR [ROUNDS]
set -euo pipefail
data=$(cd "${1:?usage: bench/cnn/run.sh MNIST_DIR [ROUNDS]}" && pwd)
rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/train" ./cmd/train)
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for r in $(seq "$rounds"); do
	for t in 1 2; do
		OMP_WAIT_POLICY=PASSIVE $py "$here/torch_cnn.py" "$data" "$t" | awk -v t="$t" '{print $1}' >> "$tmp/torch$t"
	done
	"$tmp/train" --config "$root/configs/cnn.toml" --log-format json --set data.path="$data" \
		--set train.epochs=1 --set log.every=10 --set log.dir="$tmp/logs$r" --set train.checkpoint_dir="$tmp/ck$r" 2>/dev/null
	grep '"event":"step"' "$tmp"/logs$r/*.jsonl | tail -n +5 | grep -o '"samples_per_sec":[0-9.]*' | cut -d: -f2 | median >> "$tmp/pipetrain"
	echo "round $r: torch1 $(tail -1 "$tmp/torch1") torch2 $(tail -1 "$tmp/torch2") pipetrain $(tail -1 "$tmp/pipetrain")" >&2
done
t1=$(median < "$tmp/torch1"); t2=$(median < "$tmp/torch2"); p=$(median < "$tmp/pipetrain")
best=$(printf '%s\n%s\n' "$t1" "$t2" | sort -n | tail -1)
printf 'MNIST CNN, one epoch, samples/s, medians of %d rounds\n' "$rounds"
printf 'PyTorch 1 thread %.0f, 2 threads %.0f; pipetrain (auto) %.0f: %.2fx PyTorch best\n' "$t1" "$t2" "$p" "$(echo "$p / $best" | bc -l)"
