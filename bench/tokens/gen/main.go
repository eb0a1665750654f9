// Command gen writes a prepared token folder of seeded random ids, as
// train prepare would write one: train.bin of --tokens ids, val.bin of a
// tenth as many, and meta.json for a "chars" vocabulary of --vocab
// characters from '0' on. For measuring training from large token files
// without a corpus that large (bench/tokens/rss.sh).
//
//	go run ./bench/tokens/gen --tokens 100000000 --vocab 64 --out DIR
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/pipetrain/pipetrain/dataset"
)

func main() {
	n := flag.Int("tokens", 1_000_000, "ids in train.bin; val.bin holds a tenth as many")
	vocab := flag.Int("vocab", 64, "the vocabulary's size: ids are below it (at most 64 characters from '0')")
	out := flag.String("out", "", "the folder to write")
	seed := flag.Uint64("seed", 1, "the seed of the ids")
	flag.Parse()
	if *out == "" || *vocab < 1 || *vocab > 64 || *n < 1 {
		fail(fmt.Errorf("--out is required, --vocab in [1, 64], --tokens positive"))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	for _, f := range []struct {
		name string
		n    int
	}{{"train.bin", *n}, {"val.bin", max(1, *n/10)}} {
		if err := write(filepath.Join(*out, f.name), f.n, *vocab, rng); err != nil {
			fail(err)
		}
	}
	tokens := make([]string, *vocab)
	for i := range tokens {
		tokens[i] = string(rune('0' + i))
	}
	meta, _ := json.Marshal(dataset.TokenMeta{DType: dataset.TokensUint16, VocabSize: *vocab, Vocab: dataset.VocabChars, Tokens: tokens})
	if err := os.WriteFile(filepath.Join(*out, "meta.json"), meta, 0o644); err != nil {
		fail(err)
	}
}

// write writes n random ids below vocab to path, a chunk at a time.
func write(path string, n, vocab int, rng *rand.Rand) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	ids := make([]int32, 1<<16)
	for lo := 0; lo < n; lo += len(ids) {
		part := ids[:min(len(ids), n-lo)]
		for i := range part {
			part[i] = int32(rng.IntN(vocab))
		}
		if err := dataset.WriteTokens(w, part, dataset.TokensUint16); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}
