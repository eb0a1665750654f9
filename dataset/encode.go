package dataset

import (
	"bytes"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// encodePiece is about how many bytes of text EncodeParallel gives a worker at a
// time: small enough to keep two cores busy to the end and a progress bar moving.
const encodePiece = 1 << 20

// EncodeParallel returns v's ids of text, as v.Encode(string(text)) does, encoding
// pieces of it on workers goroutines. The text is cut only just after a newline
// between two characters that are not white space, where no tokenizer's
// pre-tokenization (GPT-2's included) joins the two sides, so the ids equal a
// one-piece encoding. progress, if not nil, is called on the caller's goroutine with
// the bytes encoded so far, after each piece. An error is the one v.Encode gives for
// the whole text.
func EncodeParallel(v Vocab, text []byte, workers int, progress func(done int)) ([]int32, error) {
	return encodeParallel(v, text, workers, encodePiece, progress)
}

func encodeParallel(v Vocab, text []byte, workers, piece int, progress func(done int)) ([]int32, error) {
	pieces := cutText(text, piece)
	ids := make([][]int32, len(pieces))
	done := make(chan int, len(pieces))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range max(1, min(workers, len(pieces))) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(pieces) || failed.Load() {
					return
				}
				var err error
				if ids[i], err = v.Encode(string(pieces[i])); err != nil {
					failed.Store(true)
				}
				done <- len(pieces[i])
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	n := 0
	for d := range done {
		n += d
		if progress != nil {
			progress(n)
		}
	}
	if failed.Load() {
		// the whole text's encoding names the offending character by its place in it
		_, err := v.Encode(string(text))
		return nil, err
	}
	total := 0
	for _, p := range ids {
		total += len(p)
	}
	out := make([]int32, 0, total)
	for i, p := range ids {
		out = append(out, p...)
		ids[i] = nil
	}
	return out, nil
}

// cutText cuts text into pieces of about size bytes or more, each cut just after a
// newline whose neighbours are characters other than white space.
func cutText(text []byte, size int) [][]byte {
	var pieces [][]byte
	for len(text) > size {
		cut := safeCut(text, size)
		if cut < 0 {
			break
		}
		pieces = append(pieces, text[:cut])
		text = text[cut:]
	}
	if len(text) > 0 {
		pieces = append(pieces, text)
	}
	return pieces
}

// safeCut returns the first place at or after from where text may be cut: just
// after a '\n' with a character that is not white space on each side. -1 if none.
func safeCut(text []byte, from int) int {
	for i := from; i < len(text); {
		j := bytes.IndexByte(text[i:], '\n')
		if j < 0 {
			return -1
		}
		nl := i + j
		if nl > 0 && nl+1 < len(text) {
			before, _ := utf8.DecodeLastRune(text[:nl])
			after, _ := utf8.DecodeRune(text[nl+1:])
			if !unicode.IsSpace(before) && !unicode.IsSpace(after) {
				return nl + 1
			}
		}
		i = nl + 1
	}
	return -1
}
