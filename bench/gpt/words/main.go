// Command words tells how many of a generated text's words occur in the
// training text: a check that a language model learnt its corpus's words
// rather than letter soup. A word is a run of letters; the training text is
// the first 1 − test_fraction of the corpus, as train splits it.
//
//	go run ./bench/gpt/words --text input.txt --sample sample.txt [--min 0.7]
//
// It prints the share and exits 1 when it is below --min.
package main

import (
	"flag"
	"fmt"
	"os"
	"unicode"
)

func main() {
	text := flag.String("text", "", "the corpus (UTF-8)")
	sample := flag.String("sample", "", "the generated text")
	testFraction := flag.Float64("test_fraction", 0.1, "the corpus's held-out tail, left out of the vocabulary of words")
	least := flag.Float64("min", 0.7, "the share of words below which the check fails")
	flag.Parse()
	corpus, err := os.ReadFile(*text)
	if err != nil {
		fail(err)
	}
	gen, err := os.ReadFile(*sample)
	if err != nil {
		fail(err)
	}
	r := []rune(string(corpus))
	known := map[string]bool{}
	for _, w := range words(string(r[:int(float64(len(r))*(1-*testFraction))])) {
		known[w] = true
	}
	ws := words(string(gen))
	if len(ws) == 0 {
		fail(fmt.Errorf("%s has no words", *sample))
	}
	found := 0
	for _, w := range ws {
		if known[w] {
			found++
		}
	}
	share := float64(found) / float64(len(ws))
	fmt.Printf("%d of %d words (%.1f%%) occur in the training text\n", found, len(ws), 100*share)
	if share < *least {
		os.Exit(1)
	}
}

// words returns the runs of letters of s, in order.
func words(s string) []string {
	var out []string
	start := -1
	for i, c := range s + " " {
		switch letter := unicode.IsLetter(c); {
		case letter && start < 0:
			start = i
		case !letter && start >= 0:
			out = append(out, s[start:i])
			start = -1
		}
	}
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "words:", err)
	os.Exit(2)
}
