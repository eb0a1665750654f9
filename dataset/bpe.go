package dataset

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// bpeModel is a byte-level BPE: the bytes of each id, the id of each byte,
// and the merges, a pair of adjacent ids to the id it becomes and the
// merge's rank (lower merges first). It is never modified once built.
type bpeModel struct {
	tokens  []string           // id -> its bytes
	byteID  [256]int32         // the id of each one-byte token
	merges  map[uint64]bpeRule // pairKey(left, right) -> rule
	special map[int32]bool     // ids never made by merging (gpt2's <|endoftext|>)
	// whole: a pre-token that is itself a token encodes as that token
	// before any merging, as tiktoken does (gpt2; bpe follows the merges
	// alone, as Hugging Face tokenizers do).
	whole map[string]int32
}

type bpeRule struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// byteRunes is GPT-2's bytes_to_unicode: each byte's printable character in
// vocab.json and tokenizer.json ("Ġ" for the space). The bytes that are
// printable Latin-1 stand for themselves; the others take 256, 257, ... in
// byte order.
var byteRunes, runeBytes = func() ([256]rune, map[rune]byte) {
	var br [256]rune
	rb := make(map[rune]byte, 256)
	n := rune(0)
	for b := range 256 {
		if '!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF {
			br[b] = rune(b)
		} else {
			br[b] = 256 + n
			n++
		}
		rb[br[b]] = byte(b)
	}
	return br, rb
}()

// printable is s's bytes in GPT-2's printable form.
func printable(s string) string {
	var sb strings.Builder
	sb.Grow(2 * len(s))
	for i := range len(s) {
		sb.WriteRune(byteRunes[s[i]])
	}
	return sb.String()
}

// fromPrintable is the bytes a printable token stands for.
func fromPrintable(t string) (string, bool) {
	b := make([]byte, 0, len(t))
	for _, r := range t {
		c, ok := runeBytes[r]
		if !ok {
			return "", false
		}
		b = append(b, c)
	}
	return string(b), true
}

// Character classes of GPT-2's pre-tokenization.
const (
	clSpace = iota
	clLetter
	clNumber
	clOther // also a byte of invalid UTF-8
)

// classAt returns the class and width of the character at s[i]; a byte of
// invalid UTF-8 is a character of class other, one byte wide.
func classAt(s string, i int) (class, size int) {
	c := s[i]
	if c < utf8.RuneSelf {
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			return clLetter, 1
		case '0' <= c && c <= '9':
			return clNumber, 1
		case c == ' ' || '\t' <= c && c <= '\r':
			return clSpace, 1
		}
		return clOther, 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && size == 1:
		return clOther, 1
	case unicode.IsLetter(r):
		return clLetter, size
	case unicode.IsNumber(r):
		return clNumber, size
	case unicode.IsSpace(r):
		return clSpace, size
	}
	return clOther, size
}

// contractions are the first alternatives of GPT-2's pattern.
var contractions = []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"}

// pretokens calls yield with each piece of s as GPT-2's pattern
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// splits it (\s is Unicode's White_Space, as in tiktoken's Rust regex),
// written out by hand: it is several times faster than a regular
// expression engine with look-ahead, and it reads any bytes, a byte of
// invalid UTF-8 being a character of the class [^\s\p{L}\p{N}].
func pretokens(s string, yield func(piece string)) {
	for i := 0; i < len(s); {
		start := i
		if s[i] == '\'' {
			if c, ok := contraction(s[i:]); ok {
				yield(s[i : i+len(c)])
				i += len(c)
				continue
			}
		}
		class, size := classAt(s, i)
		if s[i] == ' ' && i+1 < len(s) {
			if next, nsize := classAt(s, i+1); next != clSpace {
				class, i = next, i+1+nsize // " ?" then the first character of the run
			} else {
				i += size
			}
		} else {
			i += size
		}
		if class != clSpace {
			for i < len(s) {
				c, n := classAt(s, i)
				if c != class {
					break
				}
				i += n
			}
			yield(s[start:i])
			continue
		}
		// A run of white space: all of it at the end of the text, else all
		// but its last character (which goes with what follows), unless it
		// is that one character.
		last := start
		for i < len(s) {
			c, n := classAt(s, i)
			if c != clSpace {
				break
			}
			last = i
			i += n
		}
		if i < len(s) && last > start {
			i = last
		}
		yield(s[start:i])
	}
}

func contraction(s string) (string, bool) {
	for _, c := range contractions {
		if strings.HasPrefix(s, c) {
			return c, true
		}
	}
	return "", false
}

// encode appends the ids of s to ids: each pre-token's bytes merged by the
// rules, the cache keeping each distinct pre-token's ids.
func (m *bpeModel) encode(ids []int32, s string, cache map[string][]int32) []int32 {
	var w bpeWord
	pretokens(s, func(piece string) {
		if got, ok := cache[piece]; ok {
			ids = append(ids, got...)
			return
		}
		n := len(ids)
		if id, ok := m.whole[piece]; ok {
			ids = append(ids, id)
		} else {
			ids = w.merge(m, piece, ids, math.MaxInt32)
		}
		cache[piece] = ids[n:len(ids):len(ids)]
	})
	return ids
}

// bpeWord is the scratch space of merging one pre-token.
type bpeWord struct {
	sym  []bpeSym
	cand bpeHeap
}

type bpeSym struct {
	id         int32
	prev, next int32 // neighbours in the list, -1 at the ends
	gone       bool  // merged into its left neighbour
}

type bpeCand struct {
	rank, pos, id int32
	right         int32 // the id of the right symbol when pushed, to tell a stale candidate
}

// bpeHeap orders candidates by rank, then leftmost first, as tiktoken and
// Hugging Face tokenizers merge.
type bpeHeap []bpeCand

func (h bpeHeap) Len() int { return len(h) }
func (h bpeHeap) Less(i, j int) bool {
	return h[i].rank < h[j].rank || h[i].rank == h[j].rank && h[i].pos < h[j].pos
}
func (h bpeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *bpeHeap) Push(x any)   { *h = append(*h, x.(bpeCand)) }
func (h *bpeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// merge appends piece's ids to ids, merging by the rules of rank below
// limit. A heap of candidate pairs, checked when popped, keeps a long piece
// (a run of spaces) at O(n log n).
func (w *bpeWord) merge(m *bpeModel, piece string, ids []int32, limit int32) []int32 {
	w.sym = w.sym[:0]
	for i := range len(piece) {
		w.sym = append(w.sym, bpeSym{id: m.byteID[piece[i]], prev: int32(i) - 1, next: int32(i) + 1})
	}
	w.sym[len(w.sym)-1].next = -1
	w.cand = w.cand[:0]
	push := func(pos int32) {
		s := w.sym[pos]
		if s.next < 0 {
			return
		}
		right := w.sym[s.next].id
		if r, ok := m.merges[pairKey(s.id, right)]; ok && r.rank < limit {
			heap.Push(&w.cand, bpeCand{rank: r.rank, pos: pos, id: r.id, right: right})
		}
	}
	for i := range w.sym {
		push(int32(i))
	}
	for w.cand.Len() > 0 {
		c := heap.Pop(&w.cand).(bpeCand)
		s := &w.sym[c.pos]
		if s.gone || s.next < 0 || w.sym[s.next].id != c.right || m.merges[pairKey(s.id, c.right)] != (bpeRule{c.rank, c.id}) {
			continue // stale: a neighbour merged since
		}
		r := &w.sym[s.next]
		r.gone = true
		s.id, s.next = c.id, r.next
		if s.next >= 0 {
			w.sym[s.next].prev = c.pos
		}
		if s.prev >= 0 {
			push(s.prev)
		}
		push(c.pos)
	}
	for i := int32(0); i >= 0; i = w.sym[i].next {
		ids = append(ids, w.sym[i].id)
	}
	return ids
}

// trainBPE learns size−256 merges from text: the pre-tokens' bytes start
// as ids 0..255 (a byte's id is its value), and each merge joins the pair
// of adjacent ids seen most often (each pre-token counted as often as it
// occurs), ties going to the smallest pair (left id, then right id), into
// the next id. Counts are updated where a merge changes them, never
// recounted. It stops early when no pair is left.
func trainBPE(text []byte, size int) *bpeModel {
	m := &bpeModel{tokens: slices.Clone(bytesTokens), merges: map[uint64]bpeRule{}}
	for b := range 256 {
		m.byteID[b] = int32(b)
	}
	counts := map[string]int64{}
	pretokens(string(text), func(p string) { counts[p]++ })
	keys := make([]string, 0, len(counts))
	for p := range counts {
		keys = append(keys, p)
	}
	slices.Sort(keys) // word indices independent of map order
	words := make([][]int32, len(keys))
	freq := make([]int64, len(keys))
	pairs := map[uint64]int64{}
	where := map[uint64][]int32{} // pair -> words that held it (some may no longer)
	for w, p := range keys {
		ids := make([]int32, len(p))
		for i := range len(p) {
			ids[i] = int32(p[i])
		}
		words[w], freq[w] = ids, counts[p]
		for i := 1; i < len(ids); i++ {
			k := pairKey(ids[i-1], ids[i])
			if pairs[k] == 0 {
				where[k] = append(where[k], int32(w))
			} else if l := where[k]; l[len(l)-1] != int32(w) {
				where[k] = append(where[k], int32(w))
			}
			pairs[k] += freq[w]
		}
	}
	h := make(pairHeap, 0, len(pairs))
	for k, n := range pairs {
		h = append(h, pairCount{k, n})
	}
	heap.Init(&h)
	stamp := make([]int32, len(words)) // the merge that last rewrote each word, +1
	changed := map[uint64]bool{}
	for id := int32(256); int(id) < size && h.Len() > 0; {
		top := heap.Pop(&h).(pairCount)
		if n := pairs[top.key]; n != top.n { // stale: counts only fall, so it goes back lower
			if n > 0 {
				heap.Push(&h, pairCount{top.key, n})
			}
			continue
		}
		a, b := int32(top.key>>32), int32(uint32(top.key))
		m.tokens = append(m.tokens, m.tokens[a]+m.tokens[b])
		m.merges[top.key] = bpeRule{rank: id - 256, id: id}
		clear(changed)
		for _, w := range where[top.key] {
			if stamp[w] == id+1 {
				continue
			}
			stamp[w] = id + 1
			words[w] = mergeWord(words[w], a, b, id, freq[w], pairs, where, changed, w)
		}
		delete(where, top.key)
		delete(pairs, top.key)
		for k := range changed {
			if n := pairs[k]; n > 0 && (int32(k>>32) == id || int32(uint32(k)) == id) {
				heap.Push(&h, pairCount{k, n}) // a new pair; old pairs' stale entries are fixed when popped
			}
		}
		id++
	}
	return m
}

// mergeWord replaces each (a, b) in ids, leftmost first, by id, moving the
// word's pair counts (times its frequency f) from the pairs it loses to
// the ones it gains.
func mergeWord(ids []int32, a, b, id int32, f int64, pairs map[uint64]int64, where map[uint64][]int32, changed map[uint64]bool, w int32) []int32 {
	out := ids[:0:0]
	for i := 0; i < len(ids); i++ {
		if i+1 < len(ids) && ids[i] == a && ids[i+1] == b {
			out = append(out, id)
			i++
			continue
		}
		out = append(out, ids[i])
	}
	if len(out) == len(ids) {
		return ids
	}
	for i := 1; i < len(ids); i++ {
		k := pairKey(ids[i-1], ids[i])
		pairs[k] -= f
		changed[k] = true
	}
	for i := 1; i < len(out); i++ {
		k := pairKey(out[i-1], out[i])
		if l := where[k]; len(l) == 0 || l[len(l)-1] != int32(w) {
			where[k] = append(where[k], int32(w))
		}
		pairs[k] += f
		changed[k] = true
	}
	return out
}

type pairCount struct {
	key uint64
	n   int64
}

// pairHeap puts the most frequent pair on top, the smallest (left, right)
// among equals: a total order, so the merges do not depend on map order.
type pairHeap []pairCount

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	return h[i].n > h[j].n || h[i].n == h[j].n && h[i].key < h[j].key
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairCount)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// check checks that a model read from a file is consistent: each merge
// joins two ids into the id of their concatenated bytes. The first bad
// merge by rank is the one reported.
func (m *bpeModel) check() error {
	keys := slices.SortedFunc(maps.Keys(m.merges), func(x, y uint64) int { return cmp.Compare(m.merges[x].rank, m.merges[y].rank) })
	for _, k := range keys {
		r := m.merges[k]
		a, b := int32(k>>32), int32(uint32(k))
		if m.tokens[a]+m.tokens[b] != m.tokens[r.id] {
			return fmt.Errorf("merge %d: %q + %q is not token %d %q", r.rank, printable(m.tokens[a]), printable(m.tokens[b]), r.id, printable(m.tokens[r.id]))
		}
	}
	return nil
}
