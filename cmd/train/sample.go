package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/pipetrain/pipetrain/model"
)

const sampleUsage = "usage: train sample --checkpoint DIR [--prompt TEXT] [--tokens N] [--temperature T] [--top_k K] [--top_p P] [--seed S]"

// runSample prints text a checkpoint's language model writes after
// --prompt: the prompt, then --tokens tokens drawn at --temperature from
// the --top_k most likely cut to the nucleus of mass --top_p, the same for
// the same --seed. Each token is written as it is drawn.
func runSample(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("sample", flag.ContinueOnError)
	dir := fs.String("checkpoint", "", "a checkpoint folder (step-…), or a checkpoint_dir: its newest")
	prompt := fs.String("prompt", "\n", "the text to continue")
	tokens := fs.Int("tokens", 500, "how many tokens to write")
	temperature := fs.Float64("temperature", 0.8, "below 1 sharpens the distribution, above 1 flattens it; 0 takes the most likely token")
	topK := fs.Int("top_k", 200, "draw from the k most likely tokens only; 0 for all")
	topP := fs.Float64("top_p", 1, "draw from the fewest most likely tokens whose probabilities add up to p; 1 for all")
	seed := fs.Uint64("seed", 1337, "the seed of the draws")
	if err := parseFlags(fs, args, sampleUsage); err != nil {
		return err
	}
	switch {
	case *dir == "":
		return badInputf("sample: --checkpoint DIR is required")
	case *tokens < 0:
		return badInputf("sample: --tokens %d must be >= 0", *tokens)
	case !(*temperature >= 0) || math.IsInf(*temperature, 0):
		return badInputf("sample: --temperature %v must be a finite number >= 0", *temperature)
	case *topK < 0:
		return badInputf("sample: --top_k %d must be >= 0", *topK)
	case !(*topP > 0 && *topP <= 1):
		return badInputf("sample: --top_p %v must be in (0, 1]", *topP)
	case *prompt == "":
		return badInputf("sample: --prompt is empty: give at least one character")
	}
	m, err := loadModel(*dir)
	if err != nil {
		return err
	}
	if !m.IsText() {
		return badInputf("sample: --checkpoint %s holds a model of data %q, not a language model", m.Checkpoint.Dir, m.Input.Data)
	}
	vocab, err := checkpointVocab("sample", m)
	if err != nil {
		return err
	}
	ids, err := vocab.Encode(*prompt)
	if err != nil {
		return badInputf("sample: --prompt: %v", err)
	}
	in := make([]int, len(ids))
	for i, id := range ids {
		in[i] = int(id)
	}
	if _, err := io.WriteString(stdout, *prompt); err != nil {
		return err
	}
	each := func(id int) error {
		_, err := io.WriteString(stdout, vocab.Decode([]int32{int32(id)}))
		return err
	}
	opt := model.GenerateOptions{Temperature: *temperature, TopK: *topK, TopP: *topP, Seed: *seed, Each: each}
	if _, err := m.Generate(in, *tokens, opt); err != nil {
		return fmt.Errorf("sample: %v", err)
	}
	_, err = io.WriteString(stdout, "\n")
	return err
}
