#!/usr/bin/env bash
# Memory of training from a token folder does not grow with its size: the
# peak RSS of STEPS (200) steps of a small GPT on a 100M-token train.bin
# (200 MB, val.bin 10M tokens) against the same run on a 1M-token one, ids
# drawn at random below a vocabulary of 64 (bench/tokens/gen). Each run ends
# with its evaluation on val.bin, bounded at 2^17 targets. The criterion:
# the difference stays within 64 MiB. A run's peak varies by up to 100 MB
# from run to run (when the collector runs), so the two alternate for
# ROUNDS (3) rounds and the medians are compared. The peak of the file
# pages' share (RssFile, the binary's and the mappings', polled from
# /proc every 0.1 s) is printed too: it has no such noise. Not part of CI.
#   bash bench/tokens/rss.sh [STEPS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-200}
rounds=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/train" ./cmd/train
go build -o "$tmp/gen" ./bench/tokens/gen
cat >"$tmp/gpt.toml" <<TOML
seed = 1
[data]
name = "tokens"
vocab = "chars"
block_size = 64
batch_size = 16
[[model.layers]]
type = "embedding"
dim = 64
init = "gpt"
[[model.layers]]
type = "transformer_block"
heads = 4
init = "gpt"
[[model.layers]]
type = "transformer_block"
heads = 4
init = "gpt"
[[model.layers]]
type = "layernorm"
[[model.layers]]
type = "linear"
init = "gpt"
[optimizer]
type = "adamw"
lr = 1e-3
[train]
max_steps = $steps
[log]
every = 50
TOML
for n in 1000000 100000000; do
	"$tmp/gen" --tokens $n --vocab 64 --out "$tmp/d$n"
done
declare -A all files
for r in $(seq "$rounds"); do
	for n in 1000000 100000000; do
		/usr/bin/time -f %M -o "$tmp/rss" "$tmp/train" --config "$tmp/gpt.toml" --log-format json \
			--set data.path="$tmp/d$n" --set log.dir="$tmp/logs" --set train.checkpoint_dir="$tmp/ck$n-$r" >/dev/null 2>"$tmp/err" &
		timer=$!
		peak=0
		while kill -0 $timer 2>/dev/null; do
			child=$(pgrep -P $timer || true)
			f=$(awk '/^RssFile/ {print $2}' /proc/${child:-0}/status 2>/dev/null || true)
			[ -n "$f" ] && [ "$f" -gt $peak ] && peak=$f
			sleep 0.1
		done
		wait $timer || { cat "$tmp/err" >&2; exit 1; }
		all[$n]+="$(tail -1 "$tmp/rss") "
		files[$n]+="$peak "
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for n in 1000000 100000000; do
	echo "train.bin of $n tokens: peak RSS (KiB) ${all[$n]}median $(echo "${all[$n]}" | median); peak RssFile ${files[$n]}"
done
d=$(($(echo "${all[100000000]}" | median) - $(echo "${all[1000000]}" | median)))
echo "difference of the medians: $d KiB ($((d / 1024)) MiB; the bound is 64 MiB)"
