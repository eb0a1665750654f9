// Package checkpoint saves and restores training state for cmd/train and model: the model's
// parameters, the optimizer's state, and the counters that let a resumed run
// continue with exactly the losses of an unbroken one.
//
// # Overview
//
// Save writes a checkpoint atomically; Latest finds the newest complete one under
// a root; Load reads one back and verifies all of it; Prune keeps the newest few.
//
//	dir, err := checkpoint.Save("checkpoints", meta, params, optimState)
//	...
//	dir, ok, err := checkpoint.Latest("checkpoints")
//	meta, params, optimState, err := checkpoint.Load(dir)
//
// Tensors travel as map[string]*tensor.Tensor keyed by parameter name, such as
// "0.weight"; the caller decides the names. Values are kept bit for bit, NaN
// payloads and -0 included, so a resumed run is bit-identical.
//
// # Layout
//
// Each checkpoint is one directory named for its step, zero-padded to eight
// digits so that names sort by step (longer names for steps from 10⁸ on; the
// package orders by number, not by name):
//
//	checkpoints/
//	    step-00000010/
//	    step-00000020/
//	        model.safetensors      the parameters
//	        optimizer.safetensors  the optimizer's state (momentum, Adam moments)
//	        state.json             Meta, plus the size and CRC-32C of both files
//	        tokenizer.json         (SaveFiles) any more files the caller gives, such as
//	                               a "bpe" text model's vocabulary
//
// state.json holds Meta (version, step, epoch and next batch, seed, optimizer type
// and step, config hash, Extra) as indented JSON, and under "files" the size and
// CRC-32C (Castagnoli) of each weight file. Load refuses a file whose size or
// checksum differs, so a flipped bit or a file swapped in from another checkpoint
// is caught, not trained on.
//
// # Atomicity
//
// Save (SaveFiles with its extra files too) writes the files into a new sibling directory
// .tmp-step-00000020-<random>, fsyncs each file and then that directory, renames
// it to step-00000020, and fsyncs the root. Rename is atomic, and the fsyncs put
// the data on disk before the name that points to it, so a crash or power loss
// at any moment leaves either the old set of checkpoints or the old set plus the
// new one, never a partial step- directory. An existing checkpoint of the same
// step is renamed aside to .old-step-00000020-<random> first and removed after
// the new one is in place; a crash between those two renames leaves the old copy
// under its .old- name, which the next Save renames back if no step-00000020
// exists by then.
//
// Latest considers only step- directories whose three files exist and whose
// state.json parses and names that step; it ignores .tmp- and .old- directories
// and anything else. The next Save removes the .tmp- leftovers of an interrupted
// Save or Prune. Latest does not read the weights: Load does, and reports the
// first thing wrong with the file's path, as in
//
//	checkpoint: checkpoints/step-00000020/model.safetensors: data offsets of "0.weight" [16, 36] span 20 bytes, but F32 shape [2 3] needs 24
//
// One process at a time may write into a root. On Windows directories are not
// fsynced (they cannot be opened for it); renames there rely on NTFS's journal.
//
// # The safetensors format
//
// Weight files use safetensors, the format of Hugging Face's safetensors library,
// which PyTorch, JAX and most model hubs read (safetensors.torch.load_file, or
// safe_open). A file is:
//
//   - N, the length of the header, as a little-endian uint64;
//   - N bytes of UTF-8 JSON, padded with spaces to a multiple of 8: an object that
//     maps each tensor's name to {"dtype": "F32" or "F64", "shape": [...],
//     "data_offsets": [begin, end]}, plus an optional "__metadata__" object of
//     strings;
//   - the data: each tensor's elements in row-major order, little-endian, the
//     tensors back to back; offsets count from the start of the data.
//
// Encode lays tensors out as the reference implementation does (by descending
// element size, so F64 before F32, then by name) and writes compact JSON as
// serde_json does, so for the same tensors it produces the reference's bytes.
//
// Decode is strict. It refuses a header length over 100 MB (MaxHeaderSize) or
// past the end of the input, a header that is not valid UTF-8 or not one JSON
// object, duplicate keys, unknown fields, dtypes other than F32 and F64, shapes
// that are not arrays of non-negative integers or whose size overflows, offsets
// that do not tile the data section from 0 without gap or overlap or that do not
// span exactly the shape's bytes, and bytes after the last tensor; errors name the
// tensor and the numbers. Like the reference, it accepts any order of offsets,
// whitespace around the JSON, and headers not padded to 8 bytes. A header that
// promises more data than the input holds makes Decode fail, not allocate for it.
// FuzzDecode checks that no input makes it panic.
//
// DecodeWide, for files written elsewhere (Hugging Face's GPT-2 weights),
// reads F16 and BF16 tensors too, widened exactly to float32; a checkpoint
// never holds halves, so Load and Decode refuse them.
//
// # Why a hand-written codec
//
// No Go module for safetensors is available to this project (it depends on the
// standard library and its own packages only), and the format is small enough to
// implement from its description in a few hundred lines. Owning it also lets the
// decoder be stricter than the reference (duplicate keys, unknown fields), report
// errors that name the tensor and offsets rather than an error code, stream
// through an io.Reader without mapping the file, and hand back pipetrain tensors
// without a conversion layer. Golden tests pin the byte layout: a file written out
// by hand from the format's description, and the byte vectors the reference
// implementation's own tests expect.
package checkpoint
