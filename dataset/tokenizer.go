package dataset

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// TokenizerFile is the name of a "bpe" vocabulary's file beside a checkpoint's
// state.json, or a prepared data folder's token files.
const TokenizerFile = "tokenizer.json"

// tokenizerJSON is the part of Hugging Face tokenizers' tokenizer.json this package
// writes and reads.
type tokenizerJSON struct {
	Version       string          `json:"version"`
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  *byteLevelJSON  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       *byteLevelJSON  `json:"decoder"`
	Model         bpeJSON         `json:"model"`
}

type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type byteLevelJSON struct {
	Type           string `json:"type"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	TrimOffsets    bool   `json:"trim_offsets"`
	UseRegex       *bool  `json:"use_regex,omitempty"`
}

type bpeJSON struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   orderedVocab    `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"` // ["a b", ...] or [["a", "b"], ...]
}

// orderedVocab is the vocab object, written in id order as Hugging Face writes it.
type orderedVocab []string

func (o orderedVocab) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for id, t := range o {
		if id > 0 {
			b.WriteByte(',')
		}
		k, err := marshalNoEscape(t)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s:%d", k, id)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *orderedVocab) UnmarshalJSON(data []byte) error {
	var m map[string]int
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	type entry struct {
		tok string
		id  int
	}
	es := make([]entry, 0, len(m))
	for t, id := range m {
		es = append(es, entry{t, id})
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Or(cmp.Compare(a.id, b.id), strings.Compare(a.tok, b.tok)) })
	for i := 1; i < len(es); i++ {
		if es[i].id == es[i-1].id {
			return fmt.Errorf("vocab: %q and %q both have id %d", es[i-1].tok, es[i].tok, es[i].id)
		}
	}
	*o = make(orderedVocab, len(es))
	for i, e := range es {
		if e.id != i {
			return fmt.Errorf("vocab: no token has id %d: the ids of %d tokens must be 0..%d", i, len(es), len(es)-1)
		}
		(*o)[i] = e.tok
	}
	return nil
}

// marshalNoEscape writes s as a JSON string, leaving <, > and & as they are.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// TokenizerJSON returns a "bpe" or "gpt2" vocabulary as Hugging Face tokenizers'
// tokenizer.json: a BPE model (its vocab in GPT-2's printable form, its merges in order
// as "left right" strings) behind a ByteLevel pre-tokenizer (GPT-2's pattern, no prefix
// space) and a ByteLevel decoder, which Hugging Face tokenizers, transformers.js and
// ReadTokenizerJSON read to the same ids. GPT-2's merges are worked out from its ranks
// (see gpt2Merges), and its <|endoftext|> is an added token; ReadTokenizerJSON reads it
// back as a "bpe" vocabulary. "chars" and "bytes" are no BPE, and have none.
func (v Vocab) TokenizerJSON() ([]byte, error) {
	m := v.bpe
	var merges []string
	switch v.kind {
	case VocabBPE:
		merges = make([]string, len(m.merges))
		for k, r := range m.merges {
			merges[r.rank] = printable(m.tokens[int32(k>>32)]) + " " + printable(m.tokens[int32(uint32(k))])
		}
	case VocabGPT2:
		pairs, err := gpt2Merges()
		if err != nil {
			return nil, err
		}
		merges = make([]string, len(pairs))
		for i, p := range pairs {
			merges[i] = printable(m.tokens[p[0]]) + " " + printable(m.tokens[p[1]])
		}
	default:
		return nil, fmt.Errorf("dataset: vocab %q has no tokenizer.json (only %q and %q do)", v.kind, VocabBPE, VocabGPT2)
	}
	mj, err := marshalNoEscape(merges)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	yes := true
	t := tokenizerJSON{
		Version: "1.0", Truncation: null, Padding: null, AddedTokens: []addedToken{}, Normalizer: null, PostProcessor: null,
		PreTokenizer: &byteLevelJSON{Type: "ByteLevel", AddPrefixSpace: false, TrimOffsets: true, UseRegex: &yes},
		Decoder:      &byteLevelJSON{Type: "ByteLevel", AddPrefixSpace: true, TrimOffsets: true, UseRegex: &yes},
		Model:        bpeJSON{Type: "BPE", Vocab: orderedVocab(v.tokens), Merges: mj},
	}
	for _, id := range slices.Sorted(maps.Keys(m.special)) {
		t.AddedTokens = append(t.AddedTokens, addedToken{ID: int(id), Content: m.tokens[id], Special: true})
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(t); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return b.Bytes(), nil
}

var null = json.RawMessage("null")

// ReadTokenizerJSON reads a byte-level BPE from Hugging Face tokenizers' tokenizer.json
// (as TokenizerJSON writes it, or GPT-2's own) as a "bpe" vocabulary. The model must be
// a BPE over all 256 bytes behind a ByteLevel pre-tokenizer without a prefix space; a
// merge must join two tokens into a token. Added tokens keep their ids and are never
// produced by Encode (their text is ordinary text there), as tiktoken's
// encode_ordinary. An error names what is wrong.
func ReadTokenizerJSON(data []byte) (Vocab, error) {
	var t tokenizerJSON
	if err := json.Unmarshal(data, &t); err != nil {
		return Vocab{}, fmt.Errorf("dataset: tokenizer.json: %v", err)
	}
	switch {
	case t.Model.Type != "BPE":
		return Vocab{}, fmt.Errorf("dataset: tokenizer.json: model type %q, want \"BPE\"", t.Model.Type)
	case t.PreTokenizer == nil || t.PreTokenizer.Type != "ByteLevel" || t.PreTokenizer.AddPrefixSpace || t.PreTokenizer.UseRegex != nil && !*t.PreTokenizer.UseRegex:
		return Vocab{}, fmt.Errorf("dataset: tokenizer.json: want a ByteLevel pre_tokenizer with GPT-2's pattern and no prefix space")
	case t.Model.ContinuingSubwordPrefix != nil && *t.Model.ContinuingSubwordPrefix != "" || t.Model.EndOfWordSuffix != nil && *t.Model.EndOfWordSuffix != "":
		return Vocab{}, fmt.Errorf("dataset: tokenizer.json: a byte-level BPE has no continuing_subword_prefix or end_of_word_suffix")
	}
	vocab := t.Model.Vocab
	m := &bpeModel{tokens: make([]string, len(vocab)), merges: map[uint64]bpeRule{}, special: map[int32]bool{}}
	ids := make(map[string]int32, len(vocab))
	special := map[int]string{}
	for _, a := range t.AddedTokens {
		special[a.ID] = a.Content
	}
	for id, tok := range vocab {
		ids[tok] = int32(id)
		if c, ok := special[id]; ok && c == tok {
			m.tokens[id], m.special[int32(id)] = tok, true
			continue
		}
		raw, ok := fromPrintable(tok)
		if !ok || raw == "" {
			return Vocab{}, fmt.Errorf("dataset: tokenizer.json: token %d %q is not in GPT-2's printable byte form", id, tok)
		}
		m.tokens[id] = raw
	}
	for b := range 256 {
		id, ok := ids[string(byteRunes[b])]
		if !ok {
			return Vocab{}, fmt.Errorf("dataset: tokenizer.json: no token for byte 0x%02x (%q): a byte-level BPE has all 256", b, string(byteRunes[b]))
		}
		m.byteID[b] = id
	}
	merges, err := readMerges(t.Model.Merges)
	if err != nil {
		return Vocab{}, err
	}
	for rank, p := range merges {
		a, okA := ids[p[0]]
		b, okB := ids[p[1]]
		id, okID := ids[p[0]+p[1]]
		if !okA || !okB || !okID {
			return Vocab{}, fmt.Errorf("dataset: tokenizer.json: merge %d %q: %q, %q or %q is not in the vocab", rank, p[0]+" "+p[1], p[0], p[1], p[0]+p[1])
		}
		if _, dup := m.merges[pairKey(a, b)]; !dup { // the first of a repeated merge ranks
			m.merges[pairKey(a, b)] = bpeRule{rank: int32(rank), id: id}
		}
	}
	if t.Model.IgnoreMerges {
		m.whole = make(map[string]int32, len(m.tokens))
		for id, s := range m.tokens {
			if !m.special[int32(id)] {
				m.whole[s] = int32(id)
			}
		}
	}
	if err := m.check(); err != nil {
		return Vocab{}, fmt.Errorf("dataset: tokenizer.json: %v", err)
	}
	return bpeVocab(VocabBPE, m), nil
}

// readMerges reads merges in either of Hugging Face's forms.
func readMerges(raw json.RawMessage) ([][2]string, error) {
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("dataset: tokenizer.json: merges: want [\"left right\", ...] or [[\"left\", \"right\"], ...]: %v", err)
	}
	pairs = make([][2]string, len(lines))
	for i, l := range lines {
		a, b, ok := strings.Cut(l, " ")
		if !ok || a == "" || b == "" || strings.Contains(b, " ") {
			return nil, fmt.Errorf("dataset: tokenizer.json: merge %d %q is not two tokens", i, l)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

// ReadTokenizerFile reads a tokenizer.json file with ReadTokenizerJSON; an error names
// the file, and a missing file's wraps fs.ErrNotExist.
func ReadTokenizerFile(path string) (Vocab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Vocab{}, fmt.Errorf("dataset: %w", err)
	}
	v, err := ReadTokenizerJSON(data)
	if err != nil {
		return Vocab{}, fmt.Errorf("dataset: %s: %s", path, unwrapPkg(err))
	}
	return v, nil
}

// WriteTokenizerFile writes v's TokenizerJSON to path through a temporary file in the
// same folder, synced and renamed into place, so a reader never sees half of one.
func WriteTokenizerFile(path string, v Vocab) error {
	data, err := v.TokenizerJSON()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer os.Remove(f.Name()) // gone by then after the rename
	_, err = io.Copy(f, bytes.NewReader(data))
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	return nil
}
