package dataset_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pipetrain/pipetrain/dataset"
)

func ExampleDigits() {
	set, err := dataset.Digits()
	if err != nil {
		log.Fatal(err)
	}
	train, test, err := dataset.Split(set, 0.2, 1)
	if err != nil {
		log.Fatal(err)
	}
	train, test = dataset.Standardize(train, test)
	fmt.Println(set.Len(), "rows of", set.Features, "features,", len(set.Classes), "classes")
	fmt.Println(train.Len(), "train rows,", test.Len(), "test rows")

	loader := dataset.NewLoader(train, 64, true, 1)
	x, labels, _ := loader.Batch(0, 0)
	fmt.Println(loader.BatchesPerEpoch(), "batches per epoch; batch 0 is", x.Shape(), "with", len(labels), "labels")
	last, _, _ := loader.Batch(0, loader.BatchesPerEpoch()-1)
	fmt.Println("the last batch is", last.Shape())
	// Output:
	// 1797 rows of 64 features, 10 classes
	// 1438 train rows, 359 test rows
	// 23 batches per epoch; batch 0 is [64 64] with 64 labels
	// the last batch is [30 64]
}

func ExampleSpirals() {
	set := dataset.Spirals(100, 3, 0.2, 1)
	train, test, err := dataset.Split(set, 0.2, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(set.X.Shape(), set.Classes)
	fmt.Println(train.Len(), test.Len())
	// Output:
	// [300 2] [0 1 2]
	// 240 60
}

func ExampleNewText() {
	text, err := dataset.NewText("poem", []byte("to be or not to be\n"), "chars")
	if err != nil {
		log.Fatal(err)
	}
	v := text.Vocab
	fmt.Printf("%d characters: %q\n", v.Size(), strings.Join(v.Tokens(), ""))
	ids, err := v.Encode("not to")
	fmt.Println(ids, v.Decode(ids), err)
	_, err = v.Encode("to go")
	fmt.Println(err)

	train, val, test, err := text.Split(0.1, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(train), len(val), len(test), "tokens")
	x, labels := dataset.TextWindows(train, 4)
	fmt.Println("windows", x.Shape(), "with", len(labels), "targets")
	fmt.Println(dataset.CheckBlock("test", test, 4))

	sampler := dataset.NewTextSampler(train, 4, 3, 1)
	xb, yb := sampler.Batch(0)
	fmt.Println("batch", xb.Shape(), "with", len(yb), "targets; steps per epoch:", sampler.StepsPerEpoch())
	// Output:
	// 8 characters: "\n benort"
	// [4 5 7 1 7 5] not to <nil>
	// dataset: character 'g' (U+0067) at 3 is not in the vocabulary
	// 17 0 2 tokens
	// windows [4 4] with 16 targets
	// dataset: block_size 4 is longer than the test split (2 tokens)
	// batch [3 4] with 12 targets; steps per epoch: 1
}

// A text tokenized once into a token file, then trained from the file mapped
// from disk: its batches are those of the text's ids in memory.
func ExampleOpenTokens() {
	text := []byte(strings.Repeat("to be, or not to be: that is the question.\n", 50))
	v, err := dataset.VocabFrom(dataset.VocabBytes, nil)
	if err != nil {
		log.Fatal(err)
	}
	ids, err := dataset.EncodeParallel(v, text, 2, nil)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "tokens")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "train.bin")
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	dtype := dataset.TokenDType(v.Size())
	if err := dataset.WriteTokens(f, ids, dtype); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}

	file, err := dataset.OpenTokens(path, dtype, v.Size())
	if err != nil {
		log.Fatal(err)
	}
	defer file.Close()
	mapped := dataset.NewTokenSampler(file, 8, 4, 1)
	inMemory := dataset.NewTextSampler(ids, 8, 4, 1)
	x, labels := mapped.Batch(3)
	wx, wl := inMemory.Batch(3)
	fmt.Println(file.Len(), dtype, "ids; batch 3 is", x.Shape(), "with", len(labels), "labels")
	fmt.Println("the same as in memory:", slices.Equal(x.Data32(), wx.Data32()) && slices.Equal(labels, wl))
	// Output:
	// 2150 uint16 ids; batch 3 is [4 8] with 32 labels
	// the same as in memory: true
}

func ExampleNewVocab() {
	// GPT-2's tokens: tiktoken's "gpt2" ids, in GPT-2's printable form.
	gpt2, err := dataset.NewVocab(dataset.VocabGPT2, nil, 0)
	if err != nil {
		log.Fatal(err)
	}
	ids, _ := gpt2.Encode("Hello world")
	fmt.Println(gpt2.Size(), ids, gpt2.Tokens()[ids[1]], gpt2.ByteLen(ids))

	// A byte-level BPE of 259 tokens trained on a text: the bytes, then three merges.
	bpe, err := dataset.NewVocab(dataset.VocabBPE, []byte("ab ab ab cd"), 259)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", bpe.Tokens()[256:])
	ids, _ = bpe.Encode("ab ab cab")
	fmt.Println(ids, bpe.Decode(ids))

	// Its tokenizer.json, which Hugging Face's libraries read too, gives it back.
	js, err := bpe.TokenizerJSON()
	if err != nil {
		log.Fatal(err)
	}
	again, err := dataset.ReadTokenizerJSON(js)
	if err != nil {
		log.Fatal(err)
	}
	ids, _ = again.Encode("ab ab cab")
	fmt.Println(ids)
	// Output:
	// 50257 [15496 995] Ġworld 11
	// ["ab" "Ġab" "Ġc"]
	// [256 257 258 256] ab ab cab
	// [256 257 258 256]
}
