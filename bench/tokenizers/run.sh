#!/bin/sh
# Compares package dataset's "gpt2" and "bpe" token ids with independent
# implementations, npm's js-tiktoken (tiktoken's "gpt2" encoding) and
# @huggingface/tokenizers (transformers.js's reader of tokenizer.json: of a
# trained "bpe" vocabulary, and of "gpt2" with its merges worked out), on
# the whole of tiny Shakespeare and of Go's English documentation (1.1 MB,
# from the Go installation), and with -update rewrites the slices of both
# that dataset's tests keep (testdata/gpt2/). Needs node and npm.
#
#   sh bench/tokenizers/run.sh [-update]
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
shakespeare=$repo/../shared/data/tinyshakespeare/input.txt
goroot=$(go env GOROOT)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Go's documentation: its HTML pages, Markdown files and package docs.
(cd "$goroot" && cat $( (ls doc/*.html; find . -name '*.md' -not -path '*/testdata/*' | sed 's|^\./||' | sort;
	find src -name doc.go -not -path '*/testdata/*' | sort; echo src/cmd/go/alldocs.go) )) > "$work/godocs.txt"

(cd "$work" && npm init -y >/dev/null && npm install --silent js-tiktoken@1.0.21 @huggingface/tokenizers@0.2.0 >/dev/null)
cp "$repo/bench/tokenizers/ids.mjs" "$work/"
ours() { (cd "$repo" && go run ./bench/tokenizers "$@"); }

status=0
for name in shakespeare godocs; do
	if [ $name = shakespeare ]; then text=$shakespeare; else text=$work/godocs.txt; fi
	ours -vocab gpt2 -tiktoken-go -tokenizer "$work/gpt2.json" -in "$text" -out "$work/$name.ours"
	node "$work/ids.mjs" gpt2 "$text" "$work/$name.tiktoken"
	if cmp -s "$work/$name.ours" "$work/$name.tiktoken"; then echo "gpt2 $name: same ids as js-tiktoken"; else echo "gpt2 $name: DIFFERENT ids"; status=1; fi
	# GPT-2's tokenizer.json, its merges worked out from the ranks, read by Hugging Face's code.
	node "$work/ids.mjs" hf "$work/gpt2.json" "$text" "$work/$name.hfgpt2"
	if cmp -s "$work/$name.hfgpt2" "$work/$name.tiktoken"; then echo "gpt2 tokenizer.json $name: @huggingface/tokenizers gives js-tiktoken's ids"; else echo "gpt2 tokenizer.json $name: DIFFERENT ids"; status=1; fi

	ours -vocab bpe -size 4096 -train "$text" -tokenizer "$work/$name.json" -in "$text" -out "$work/$name.bpe"
	node "$work/ids.mjs" hf "$work/$name.json" "$text" "$work/$name.hf"
	if cmp -s "$work/$name.bpe" "$work/$name.hf"; then echo "bpe $name: same ids as @huggingface/tokenizers"; else echo "bpe $name: DIFFERENT ids"; status=1; fi

	if [ "${1:-}" = -update ]; then
		out=$repo/dataset/testdata/gpt2
		mkdir -p "$out"
		# The first 32 KiB, cut back to a line's end.
		head -c 32768 "$text" | sed '$d' > "$out/$name.txt"
		node "$work/ids.mjs" gpt2 "$out/$name.txt" "$out/$name.ids"
	fi
done
exit $status
