// Command tokenizers writes package dataset's token ids of a text, as uint16
// little-endian, for run.sh to compare with independent implementations'.
//
//	go run ./bench/tokenizers -vocab gpt2 -in TEXT -out IDS
//	go run ./bench/tokenizers -vocab bpe -size N -train TEXT -tokenizer OUT.json -in TEXT -out IDS
//	go run ./bench/tokenizers -read TOKENIZER.json -in TEXT -out IDS   (a checkpoint's, say)
//
// It prints the encoding's speed on stderr.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/pipetrain/pipetrain/dataset"
	"github.com/tiktoken-go/tokenizer/codec"
)

func main() {
	kind := flag.String("vocab", "gpt2", "gpt2 or bpe")
	size := flag.Int("size", 0, "bpe: the vocabulary's size")
	train := flag.String("train", "", "bpe: the text to train on")
	tok := flag.String("tokenizer", "", "bpe: where to write its tokenizer.json")
	in := flag.String("in", "", "the text to encode")
	out := flag.String("out", "", "where to write its ids")
	lib := flag.Bool("tiktoken-go", false, "gpt2: also time tiktoken-go's own encoder on the text and check it agrees")
	read := flag.String("read", "", "encode with this tokenizer.json instead of making a vocabulary")
	flag.Parse()
	if err := run(*kind, *size, *train, *tok, *read, *in, *out, *lib); err != nil {
		fmt.Fprintln(os.Stderr, "tokenizers:", err)
		os.Exit(1)
	}
}

func run(kind string, size int, train, tok, read, in, out string, lib bool) error {
	var text []byte
	if kind == dataset.VocabBPE && read == "" {
		var err error
		if text, err = os.ReadFile(train); err != nil {
			return err
		}
	}
	start := time.Now()
	var v dataset.Vocab
	var err error
	if read != "" {
		v, err = dataset.ReadTokenizerFile(read)
	} else {
		v, err = dataset.NewVocab(kind, text, size)
	}
	if err != nil {
		return err
	}
	kind = v.Kind()
	fmt.Fprintf(os.Stderr, "%s: vocabulary of %d made in %v\n", kind, v.Size(), time.Since(start).Round(time.Millisecond))
	if tok != "" {
		if err := dataset.WriteTokenizerFile(tok, v); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	start = time.Now()
	ids, _ := v.Encode(string(data))
	d := time.Since(start)
	fmt.Fprintf(os.Stderr, "%s: %d bytes to %d tokens in %v: %.1f MB/s\n", kind, len(data), len(ids), d.Round(time.Millisecond), float64(len(data))/1e6/d.Seconds())
	if lib {
		c := codec.NewR50kBase()
		c.Encode("warm") // loads the ranks
		start = time.Now()
		got, _, err := c.Encode(string(data))
		d := time.Since(start)
		if err != nil {
			return err
		}
		same := len(got) == len(ids)
		for i := 0; same && i < len(got); i++ {
			same = int32(got[i]) == ids[i]
		}
		fmt.Fprintf(os.Stderr, "tiktoken-go: %d tokens in %v: %.1f MB/s, same ids: %v\n", len(got), d.Round(time.Millisecond), float64(len(data))/1e6/d.Seconds(), same)
	}
	b := make([]byte, 2*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(id))
	}
	return os.WriteFile(out, b, 0o644)
}
