// Package config reads, overrides and validates the TOML config of a
// training run, whose keys and defaults docs/config.md lists.
//
// # Layers of a config
//
// A Config is built in three layers, each overriding the one before:
//
//  1. Default: the default of every key. The model has no default layers.
//  2. The file: a TOML file may hold only what differs from the defaults.
//  3. The --set overrides, in command-line order. KEY is a dotted path of
//     TOML keys, with array elements addressed by index
//     ("model.layers.0.units=64", "optimizer.betas.1=0.99"). VALUE is a TOML
//     value (0.1, true, [0.9, 0.99], "x", {type = "relu"}); text that does not
//     parse as one, or any text given to a string key, is taken as a bare
//     string, so "data.name=mnist" and "log.dir=2024" work. A table value
//     merges into the table at KEY; an array, or a table given to an array
//     element ("model.layers.1={type = \"tanh\"}"), replaces it.
//
// Load and Parse do all three and then Validate. Per-layer defaults (init
// "xavier_uniform", shards 1, alpha 0.01, p 0.1, approximate false) fill each
// layer before its keys are read; NewLayer gives a layer with them in Go.
//
// # Checks
//
// Validate holds every check that needs no data: each name is known (data
// sets, layer types, nn.Inits, nn.Losses, optimizers, schedules), each number
// is finite and in its range, keys agree with each other (nesterov needs sgd
// with momentum, micro_batches fits in batch_size, stages fits in the layers)
// and no layer has a key its type does not take (units on a relu layer, p on
// a linear one), even one that holds its default. CheckData holds the
// checks that need the data: the
// model's output width (the units of its last linear layer) must be the
// number of classes, or 1 for a regression set.
//
// Unknown keys and values of the wrong type are errors; nothing in a config
// is silently ignored. A command that only loads data (`train eval`, which
// starts from the seed and [data] keys a checkpoint recorded) applies its
// --set overrides with SetData, which takes only seed, data.* and log.dir
// and checks only those.
//
// # Errors
//
// Every error is a single line that begins "config: " and names what is
// wrong, so that cmd/train can print it after "train: " and exit with status
// 2:
//
//	config: mlp.toml: line 7: expected value but found '\n' instead
//	config: mlp.toml: unknown key "optimizer.learning_rate"
//	config: mlp.toml: optimizer.lr = "fast": want a number
//	config: --set "optimizer.lrr=1": unknown key "optimizer.lrr" (did you mean optimizer.lr?)
//	config: model.layers[2].units: required for a linear layer
//	config: pipeline.micro_batches = 128 exceeds data.batch_size = 64
//	config: mlp.toml: pipeline.nodes was renamed pipeline.hosts
//
// Syntax errors give the file and line; unknown keys and wrong types give
// the file, or the --set, and the key's full path with array indices (an
// unknown key with the nearest known one of its table, when one is close);
// failed checks give the key and its value after all overrides. Only the
// first error is reported.
//
// # Logging
//
// Resolved returns the config as nested maps keyed by the TOML names, for
// the run_start log event; written back as TOML, it parses to the same
// config.
//
// The decoding into the Config struct is done here, by the struct's toml
// tags, rather than by the toml package, so that errors can name keys by their
// full path and so that Validate knows which keys each layer was given.
package config
