package checkpoint_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/tensor"
)

func Example() {
	root, err := os.MkdirTemp("", "checkpoints-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	model := map[string]*tensor.Tensor{
		"0.weight": tensor.FromFloat64s(tensor.Float32, []float64{1, 2, 3, 4, 5, 6}, 2, 3),
		"0.bias":   tensor.Zeros(tensor.Float32, 2),
	}
	optim := map[string]*tensor.Tensor{
		"0.weight.momentum": tensor.Full(tensor.Float32, 0.5, 2, 3),
		"0.bias.momentum":   tensor.Zeros(tensor.Float32, 2),
	}
	meta := checkpoint.Meta{
		Step: 20, Epoch: 1, Batch: 4, Seed: 1,
		OptimizerType: "sgd", OptimizerStep: 20, ConfigHash: "3f2a9c",
	}
	dir, err := checkpoint.Save(root, meta, model, optim)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("saved", filepath.Base(dir))

	// On resume: find the newest complete checkpoint, load and verify it.
	latest, ok, err := checkpoint.Latest(root)
	if err != nil || !ok {
		log.Fatal("no checkpoint: ", err)
	}
	got, model, optim, err := checkpoint.Load(latest)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("step %d, next batch %d of epoch %d, %s\n", got.Step, got.Batch, got.Epoch, got.OptimizerType)
	fmt.Println(model["0.weight"])
	fmt.Println(optim["0.weight.momentum"])
	// Output:
	// saved step-00000020
	// step 20, next batch 4 of epoch 1, sgd
	// float32[2 3] [1 2 3 4 5 6]
	// float32[2 3] [0.5 0.5 0.5 0.5 0.5 0.5]
}

func ExampleEncode() {
	var buf bytes.Buffer
	a := tensor.FromFloat64s(tensor.Float32, []float64{1, 2}, 2)
	if err := checkpoint.Encode(&buf, map[string]*tensor.Tensor{"a": a}, nil); err != nil {
		log.Fatal(err)
	}
	b := buf.Bytes()
	n := binary.LittleEndian.Uint64(b)
	fmt.Println("header length:", n)
	fmt.Printf("header: %q\n", b[8:8+n])
	fmt.Printf("data: % x\n", b[8+n:])

	tensors, _, err := checkpoint.DecodeBytes(b)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tensors["a"])
	// Output:
	// header length: 56
	// header: "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}  "
	// data: 00 00 80 3f 00 00 00 40
	// float32[2] [1 2]
}
