package config_test

import (
	"fmt"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
)

func Example() {
	file := []byte(`
[[model.layers]]
type = "linear"
units = 128

[[model.layers]]
type = "relu"

[[model.layers]]
type = "linear"
units = 10

[optimizer]
type = "adam"
lr = 0.001

[pipeline]
schedule = "sequential"
`)
	// Defaults, then the file, then the --set overrides.
	c, err := config.Parse("mlp.toml", file, []string{"model.layers.0.units=64", "optimizer.betas=[0.9, 0.99]"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Data.Name, c.Data.BatchSize, c.Model.Layers[0].Units, c.Model.Layers[0].Init)
	fmt.Println(c.Optimizer.Type, c.Optimizer.LR, c.Optimizer.Betas)

	// The data set has 64 features and 10 classes.
	fmt.Println(c.CheckData(64, 10))

	// Every error names the key, and its value.
	_, err = config.Parse("mlp.toml", file, []string{"optimizer.lr=-1"})
	fmt.Println(err)
	_, err = config.Parse("mlp.toml", file, []string{"model.layers.1.units=3"})
	fmt.Println(err)
	_, err = config.Parse("mlp.toml", file, []string{"optimizer.learning_rate=0.1"})
	fmt.Println(err)
	_, err = config.Parse("mlp.toml", file, []string{"pipeline.micro_batches=128"})
	fmt.Println(err)

	// Output:
	// digits 64 64 xavier_uniform
	// adam 0.001 [0.9 0.99]
	// <nil>
	// config: optimizer.lr = -1: must be > 0
	// config: model.layers[1].units = 3: not a key of a relu layer (it takes only type)
	// config: --set "optimizer.learning_rate=0.1": unknown key "optimizer.learning_rate"
	// config: pipeline.micro_batches = 128 exceeds data.batch_size = 64
}
