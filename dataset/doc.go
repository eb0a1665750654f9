// Package dataset loads training data into memory and serves it in deterministic
// mini-batches.
//
// # Overview
//
// A Set holds a whole data set as a float32 feature tensor X of shape [N, Features],
// a class index per row (Labels, with names in Classes) and, for a numeric label column,
// a numeric target per row (Targets, shape [N, 1]). Sets are small enough to keep in
// memory (MNIST's training images take 188 MB as float32) and are never modified by
// this package once returned: Subset, Split and Standardize make new sets.
//
// A Loader cuts a Set into mini-batches. Batch returns freshly allocated tensors the
// caller owns (they may be sent to another goroutine); BatchInto fills caller buffers
// for a loop that must not allocate.
//
// # The sets
//
//   - Digits: the 8x8 handwritten digits (1797 rows, 64 features, 10 classes), embedded
//     in the binary, so it needs no files. UCI "Optical Recognition of Handwritten
//     Digits" (E. Alpaydin, C. Kaynak, 1998), CC BY 4.0; see data/README.md.
//   - LoadIDX: MNIST or Fashion-MNIST from the four gzip-compressed IDX files (60000
//     training and 10000 test rows of 784 features, 10 classes). Download fetches them
//     from the canonical mirrors into a cache folder and verifies their SHA-256 sums.
//   - LoadCSV: a delimited text file of numeric features and one label column, such as
//     iris (string classes) or wine quality (a numeric score, usable for regression
//     through Targets or for classification through Labels).
//   - Spirals: the seeded synthetic 2-D spirals of CS231n, for quick experiments.
//   - LoadText, LoadSplits: a text file for a language model, such as tiny
//     Shakespeare (about 40,000 lines of the plays, 1,115,394 characters, public
//     domain), which DownloadShakespeare fetches from karpathy/char-rnn on GitHub and
//     verifies as Download does (see Text).
//
// A trained model's inputs load the same ways, without labels: LoadInputs reads rows
// of features as LoadCSV reads them (a label column may be there, and is dropped), and
// LoadIDXImages one IDX image file, gzip-compressed or not.
//
// Sets without a test split of their own (digits, CSV files, spirals) are divided with
// Split. Standardize (or FitStandardizer and Standardizer.Apply) rescales features
// with the training split's statistics only, so nothing about the test split leaks
// into training.
//
// # Text
//
// A language model (nanoGPT's shakespeare_char, or its shakespeare on GPT-2's tokens)
// reads a text encoded as token ids under a Vocab of one of four kinds:
//
//   - "chars": the file's distinct Unicode characters sorted by code point (tiny
//     Shakespeare has 65); the file must be UTF-8.
//   - "bytes": the 256 byte values; any file reads.
//   - "gpt2": GPT-2's byte-level BPE, 50,257 tokens (50256 is <|endoftext|>), the ids of
//     tiktoken's "gpt2" encoding with encode_ordinary (an <|endoftext|> in the text is
//     ordinary text, as nanoGPT's prepare.py has it). The ranks are tiktoken-go's
//     embedded r50k_base; the pre-tokenizer (GPT-2's pattern, written out by hand) and
//     the merging are this package's, about 15 MB/s on tiny Shakespeare against
//     tiktoken-go's own 1.5-4 MB/s (side by side on a shared machine, 2026-11-29),
//     with the same ids (and js-tiktoken's: see bench/tokenizers/run.sh and
//     testdata/gpt2). Its TokenizerJSON holds GPT-2's 50,000 merges, worked out from
//     the ranks, with which Hugging Face's pair-wise merging gives the same ids.
//   - "bpe": a byte-level BPE trained on the training split to data.vocab_size tokens
//     (see NewVocab: ids 0..255 are the bytes in byte order, then the merges, the most
//     frequent pair first, ties to the smallest pair). Its TokenizerJSON is Hugging
//     Face tokenizers' tokenizer.json, which ReadTokenizerJSON, Hugging Face's libraries
//     and transformers.js read to the same ids.
//
// Under "gpt2" and "bpe" a token is a byte string, so Decode may cut a character in two;
// Tokens gives GPT-2's printable form ("Ġthe"), which survives JSON, and ByteLen the
// bytes a run of ids stands for (bits per byte). A checkpoint keeps Vocab.Kind and
// Vocab.Tokens, from which VocabFrom rebuilds a "chars", "bytes" or "gpt2" vocabulary
// without the file; a "bpe" checkpoint keeps its tokenizer.json (TokenizerFile) too,
// as its tokens do not hold its merges.
//
// Text.Split cuts the ids, in order, into training, validation and test parts, rounding
// as nanoGPT does: tiny Shakespeare (LoadText of the file DownloadShakespeare fetches)
// at a test fraction of 0.1 gives 1,003,854 training and 111,540 test tokens.
// NewSplits and LoadSplits make a vocabulary of any kind and cut the text: "chars" and
// "bytes" by Text.Split, "gpt2" and "bpe" in characters before encoding each part, as
// nanoGPT's prepare.py does (tiny Shakespeare: 301,966 and 36,059 GPT-2 tokens), so
// that a "bpe" vocabulary learns from the training part alone; Vocab.EncodeSplits cuts
// and encodes a text under a given vocabulary (a checkpoint's). Training batches are
// windows of block_size tokens at random offsets, drawn by a TextSampler; evaluation
// reads every non-overlapping window once (TextWindows). A window's targets are its
// inputs shifted by one token, so a split needs block_size+1 tokens, which CheckBlock
// checks. The ids travel as float32 values in x (exact below 2^24) and as int labels.
//
// # Token files
//
// A corpus too large to hold as int32 ids is tokenized once (EncodeParallel encodes
// on every core, in pieces cut where the ids equal a one-piece encoding) and written
// as nanoGPT's train.bin and val.bin: little-endian uint16 ids, uint32 above 65,536
// tokens (WriteTokens, TokenDType), described by a meta.json (TokenMeta). OpenTokens
// maps such a file read-only after checking every id with pread, so the check leaves
// nothing resident. The sampler reads any Tokens, IDs in memory or a TokenFile, and
// draws the same windows from both; TokenWindows cuts evaluation windows from either,
// at most so many spread evenly. A TokenFile drops the pages each window read from
// the process's resident set, so memory does not grow with the file.
//
// # Determinism
//
// Every random choice is keyed by an explicit seed, never by time or by the order in
// which goroutines run. The order of epoch e of a shuffling Loader is the permutation
// rand.New(rand.NewPCG(seed, uint64(e))).Perm(N), so batch i of epoch e is a pure
// function of (seed, e, i): a run resumed at epoch e, batch i sees exactly the batches
// of the unbroken run, with no random state to save. Split and Spirals draw from their
// own PCG streams of the same seed, so they are independent of the epoch orders. A
// golden test pins the orders, so a change in them cannot go unnoticed.
//
// A TextSampler has no epochs: the batch of step s draws its offsets from
// rand.New(rand.NewPCG(seed, uint64(s))), so it too is a pure function of (seed, s)
// and is pinned by a golden test.
//
// # Errors
//
// Loaders return errors, never panic, on bad input files. Error text begins
// "dataset: " and names the file and what is wrong, with a 1-based line and column
// for CSV files, for example
//
//	dataset: iris.csv: line 7: column 3: "abc" is not a number
//	dataset: /data/mnist/train-images-idx3-ubyte.gz: truncated: want 47040000 pixel bytes, got 1200
//
// Errors from the file system wrap the underlying error, so errors.Is(err,
// fs.ErrNotExist) reports a missing file. Programming errors, such as a batch index
// out of range or a non-positive batch size, panic with an error value, following
// gonum's convention.
package dataset
