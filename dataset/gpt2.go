package dataset

import (
	"fmt"
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"
)

// GPT-2's vocabulary: 50,256 merged byte strings and <|endoftext|>.
const (
	gpt2Size      = 50257
	gpt2EndOfText = "<|endoftext|>"
)

// gpt2Model returns GPT-2's BPE, built once from the ranks that
// tiktoken-go's r50k_base embeds (tiktoken's "gpt2" encoding): a token's id
// is its rank, and two adjacent parts merge when their concatenated bytes
// are a token, the lowest rank first, as tiktoken does. Encoding runs here
// rather than in tiktoken-go, whose regular expression engine is several
// times slower and reads invalid UTF-8 as U+FFFD.
var gpt2Model = sync.OnceValue(func() *bpeModel {
	c := codec.NewR50kBase()
	m := &bpeModel{tokens: make([]string, gpt2Size), merges: map[uint64]bpeRule{},
		whole: make(map[string]int32, gpt2Size), special: map[int32]bool{gpt2Size - 1: true}}
	for id := range gpt2Size - 1 {
		s, err := c.Decode([]uint{uint(id)})
		if err != nil || s == "" {
			panic(fmt.Errorf("dataset: tiktoken-go's r50k_base has no token %d: %v", id, err))
		}
		m.tokens[id] = s
		m.whole[s] = int32(id)
	}
	m.tokens[gpt2Size-1] = gpt2EndOfText
	for b := range 256 {
		id, ok := m.whole[string([]byte{byte(b)})]
		if !ok {
			panic(fmt.Errorf("dataset: tiktoken-go's r50k_base has no token for byte 0x%02x", b))
		}
		m.byteID[b] = id
	}
	// Every split of a token into two tokens is a pair that merges into it.
	for id, s := range m.tokens[:gpt2Size-1] {
		for i := 1; i < len(s); i++ {
			a, okA := m.whole[s[:i]]
			b, okB := m.whole[s[i:]]
			if okA && okB {
				m.merges[pairKey(a, b)] = bpeRule{rank: int32(id), id: int32(id)}
			}
		}
	}
	return m
})

// gpt2Merges is GPT-2's list of merges, as its merges.txt has them: token
// t (256 and up, in rank order) is the merge of the two parts that the
// merges of lower rank make of its bytes. Hugging Face's pair-wise merges
// in this order give tiktoken's ids (bench/tokenizers/run.sh checks it).
var gpt2Merges = sync.OnceValues(func() ([][2]int32, error) {
	m := gpt2Model()
	var w bpeWord
	merges := make([][2]int32, 0, gpt2Size-257)
	for t := int32(256); t < gpt2Size-1; t++ {
		parts := w.merge(m, m.tokens[t], nil, t)
		if len(parts) != 2 {
			return nil, fmt.Errorf("dataset: gpt2 token %d %q is %d parts by the merges below it, not 2", t, printable(m.tokens[t]), len(parts))
		}
		merges = append(merges, [2]int32{parts[0], parts[1]})
	}
	return merges, nil
})
