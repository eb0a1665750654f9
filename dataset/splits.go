package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// Splits is a text's training, validation and test parts, encoded under Vocab. The
// validation part is empty without a validation fraction.
type Splits struct {
	Name             string
	Vocab            Vocab
	Train, Val, Test []int32
}

// LoadSplits reads a text file, makes its vocabulary of kind (size tokens for "bpe")
// and splits and encodes it as NewSplits does. The Name is the file's base name; an
// error names the file, and a missing file's wraps fs.ErrNotExist.
func LoadSplits(path, kind string, size int, testFraction, validationFraction float64) (*Splits, error) {
	if err := checkVocabKind(kind); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return newSplits(filepath.Base(path), path, data, kind, size, nil, testFraction, validationFraction)
}

// NewSplits makes data's vocabulary of kind and cuts data into training, validation
// and test parts at the fractions as Text.Split does, in the vocabulary's units:
//
//   - "chars" and "bytes": the vocabulary is made from the whole text and the ids are
//     cut, as Text.Split cuts them;
//   - "gpt2" and "bpe": the text is cut in characters (in bytes if it is not UTF-8),
//     as nanoGPT's prepare.py cuts it, and each part encoded on its own; a "bpe"
//     vocabulary of size tokens is trained on the training part alone, so nothing of
//     the validation and test parts leaks into it.
//
// name is the Splits' Name and stands for the file in errors.
func NewSplits(name string, data []byte, kind string, size int, testFraction, validationFraction float64) (*Splits, error) {
	if err := checkVocabKind(kind); err != nil {
		return nil, err
	}
	return newSplits(name, name, data, kind, size, nil, testFraction, validationFraction)
}

// EncodeSplits cuts data as NewSplits does for v's kind and encodes the parts under v
// itself: a trained model's vocabulary on its data again. Under "chars" a character
// not in v is an error naming it.
func (v Vocab) EncodeSplits(name string, data []byte, testFraction, validationFraction float64) (*Splits, error) {
	if v.kind == "" {
		return nil, fmt.Errorf("dataset: %s: the zero Vocab encodes nothing", name)
	}
	return newSplits(name, name, data, v.kind, 0, &v, testFraction, validationFraction)
}

func newSplits(name, file string, data []byte, kind string, size int, given *Vocab, testFraction, validationFraction float64) (*Splits, error) {
	if err := checkTextSize(file, data); err != nil {
		return nil, err
	}
	if kind == VocabChars || kind == VocabBytes {
		var text *Text
		if given == nil {
			var err error
			if text, err = newText(name, file, data, kind); err != nil {
				return nil, err
			}
		} else {
			ids, err := given.Encode(string(data))
			if err != nil {
				return nil, fmt.Errorf("dataset: text file %q: %s", file, unwrapPkg(err))
			}
			text = &Text{Name: name, Vocab: *given, IDs: ids}
		}
		train, val, test, err := text.Split(testFraction, validationFraction)
		if err != nil {
			return nil, err
		}
		return &Splits{Name: name, Vocab: text.Vocab, Train: train, Val: val, Test: test}, nil
	}
	trainB, valB, testB, err := splitText(name, data, testFraction, validationFraction)
	if err != nil {
		return nil, err
	}
	var v Vocab
	if given != nil {
		v = *given
	} else if v, err = NewVocab(kind, trainB, size); err != nil {
		return nil, err
	}
	s := &Splits{Name: name, Vocab: v}
	for _, p := range []struct {
		dst  *[]int32
		text []byte
	}{{&s.Train, trainB}, {&s.Val, valB}, {&s.Test, testB}} {
		*p.dst, _ = v.Encode(string(p.text)) // byte-level: every text encodes
	}
	return s, nil
}

// splitText cuts data at the fractions as Text.Split cuts ids, counting
// characters, or bytes if data is not UTF-8.
func splitText(name string, data []byte, testFraction, validationFraction float64) (train, val, test []byte, err error) {
	if !utf8.Valid(data) {
		nTrain, nFit, err := cutPoints(name, len(data), "bytes", testFraction, validationFraction)
		if err != nil {
			return nil, nil, nil, err
		}
		return data[:nTrain], data[nTrain:nFit], data[nFit:], nil
	}
	n := utf8.RuneCount(data)
	nTrain, nFit, err := cutPoints(name, n, "characters", testFraction, validationFraction)
	if err != nil {
		return nil, nil, nil, err
	}
	offTrain, offFit := -1, -1
	i := 0
	for off := range string(data) {
		if i == nTrain {
			offTrain = off
		}
		if i == nFit {
			offFit = off
			break
		}
		i++
	}
	if offFit < 0 { // nFit == n
		offFit = len(data)
	}
	if offTrain < 0 {
		offTrain = len(data)
	}
	return data[:offTrain], data[offTrain:offFit], data[offFit:], nil
}

// unwrapPkg drops the "dataset: " prefix of one of this package's errors,
// for a message that adds its own.
func unwrapPkg(err error) string {
	const p = "dataset: "
	if s := err.Error(); len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return err.Error()
}
