#!/usr/bin/env bash
# The recipe's run (configs/shakespeare-char.toml: 2000 steps) in pipetrain
# and in PyTorch (torch_gpt.py, the same model, data split, AdamW step,
# schedule and evaluation loss), at the same seed, side by side: the held-out
# loss of each. Then 500 characters sampled from "ROMEO:" at temperature 0.8,
# twice with the same seed (they must be identical), and the share of their
# words that occur in the training text, for sampling seeds 1 to 8 and
# train sample's default. Not part of CI; about 5 minutes on two cores.
#   bash bench/gpt/loss.sh INPUT_TXT [SEED]     # default seed 1
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/reference.sh
data=$(realpath "${1:?usage: bash bench/gpt/loss.sh INPUT_TXT [SEED]}")
seed=${2:-1}
setup_reference
echo "== $(date -u +%F), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, Go $(go env GOVERSION), seed $seed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/train" ./cmd/train
go build -o "$tmp/words" ./bench/gpt/words
# Each side on one core, both at once.
GOMAXPROCS=1 "$tmp/train" --config configs/shakespeare-char.toml --log-format json --set data.path="$data" \
	--set data.download=false --set seed="$seed" --set log.dir="$tmp/logs" --set train.checkpoint_dir="$tmp/ck" 2>"$tmp/ours.log" &
ref $py bench/gpt/torch_gpt.py --data "$data" --mode train --seed "$seed" --steps 2000 --threads 1 --blas_threads 1 --eval_every 500 >"$tmp/torch.log"
wait $!
ours=$(grep '"event":"eval"' "$tmp/ours.log" | tail -1 | $py -c 'import json, sys; print(round(json.load(sys.stdin)["loss"], 4))')
theirs=$(tail -1 "$tmp/torch.log" | $py -c 'import json, sys; print(json.load(sys.stdin)["eval_loss"])')
echo "held-out loss after 2000 steps: pipetrain $ours, PyTorch $theirs (difference $(awk -v a="$ours" -v b="$theirs" 'BEGIN {printf "%+.4f", a - b}'))"
sample() { "$tmp/train" sample --checkpoint "$tmp/ck" --prompt "ROMEO:" --tokens 500 --temperature 0.8 "$@"; }
sample --seed 1 >"$tmp/a.txt"
sample --seed 1 >"$tmp/b.txt"
cmp -s "$tmp/a.txt" "$tmp/b.txt" && echo "the same seed gives the same 500 characters" || echo "FAIL: the same seed gave different text"
for s in 1 2 3 4 5 6 7 8 default; do
	if [ $s = default ]; then sample >"$tmp/s.txt"; else sample --seed $s >"$tmp/s.txt"; fi
	echo "sampling seed $s: $("$tmp/words" --text "$data" --sample "$tmp/s.txt" --min 0 || true)"
done
echo "== the sample of seed 1"
cat "$tmp/a.txt"
