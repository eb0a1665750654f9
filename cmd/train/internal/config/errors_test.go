package config

import (
	"strings"
	"testing"
)

// badConfigs is the corpus of wrong configs: each is the base config (or,
// when file is set, that file) with the --set overrides applied, and must
// fail with an error that starts "config: " and contains every string of
// want: the offending key, and its value where it has one.
var badConfigs = []struct {
	file string // "" for base
	sets []string
	want []string
}{
	// seed
	{"", []string{"seed=-1"}, []string{`seed = -1: want an integer >= 0`}},
	{"", []string{"seed=1.5"}, []string{`seed = 1.5`}},
	{"", []string{"seed=x"}, []string{`--set "seed=x"`, `seed = "x": want an integer >= 0`}},
	{base + "seed = 3\n", nil, []string{`mlp.toml: unknown key "pipeline.seed"`}}, // a key after a table belongs to it
	{"seed = \"one\"\n" + base, nil, []string{`mlp.toml: seed = "one"`}},
	{"", []string{"seed={a=1, b=[2]}"}, []string{`seed = {a = 1, b = [2]}: want an integer >= 0`}},

	// [data]
	{"", []string{"data.name=imagenet"}, []string{`data.name = "imagenet": want one of digits, mnist, fashion-mnist, csv, spirals`}},
	{"", []string{"data.name="}, []string{`data.name = ""`}},
	{"", []string{"data.name=csv"}, []string{`data.path: required for data.name = "csv"`}},
	{"", []string{"data.name=tokens", "data.block_size=8"}, []string{`data.path: required for data.name = "tokens"`}},
	{"", []string{"data.name=tokens", "data.path=d"}, []string{`data.block_size = 0: required for data.name = "tokens"`}},
	{"[data]\npath = 3\n" + base, nil, []string{`mlp.toml: data.path = 3: want a string`}},
	{"", []string{"data.download=yes"}, []string{`data.download = "yes": want true or false`}},
	{"", []string{"data.label_column=1.5"}, []string{`data.label_column = 1.5: want an integer`}},
	{"", []string{"data.batch_size=0"}, []string{`data.batch_size = 0: must be at least 1`}},
	{"", []string{"data.batch_size=-3"}, []string{`data.batch_size = -3`}},
	{"", []string{"data.batch_size=64.0"}, []string{`data.batch_size = 64: want an integer`}},
	{"", []string{"data.shuffle=1"}, []string{`data.shuffle = 1: want true or false`}},
	{"", []string{"data.test_fraction=1"}, []string{`data.test_fraction = 1: must be in [0, 1)`}},
	{"", []string{"data.test_fraction=-0.1"}, []string{`data.test_fraction = -0.1`}},
	{"", []string{"data.test_fraction=nan"}, []string{`data.test_fraction = nan: must be a finite number`}},
	{"", []string{"data.test_fraction=inf"}, []string{`data.test_fraction = inf`}},
	{"", []string{"data=3"}, []string{`data = 3: want a table`}},
	{"", []string{"data.name=text"}, []string{`data.path: required for data.name = "text"`}},
	{"", []string{"data.name=shakespeare"}, []string{`data.block_size = 0: required for data.name = "shakespeare"`}},
	{"", []string{"data.name=text", "data.path=a.txt", "data.block_size=-2"}, []string{`data.block_size = -2: required`}},
	{"", []string{"data.block_size=64"}, []string{`data.block_size = 64: only for text data`, `not "digits"`}},
	{"", []string{"data.vocab=words"}, []string{`data.vocab = "words": want one of chars, bytes, gpt2, bpe`}},
	{"", []string{"data.vocab=bpe"}, []string{`data.vocab_size = 0: required for data.vocab = "bpe"`}},
	{"", []string{"data.vocab=bpe", "data.vocab_size=255"}, []string{`data.vocab_size = 255: below 256`}},
	{"", []string{"data.vocab=bpe", "data.vocab_size=-1"}, []string{`data.vocab_size = -1: below 256`}},
	{"", []string{"data.vocab_size=512"}, []string{`data.vocab_size = 512: only for data.vocab = "bpe", not "chars"`}},
	{"", []string{"data.vocab=gpt2", "data.vocab_size=512"}, []string{`data.vocab_size = 512: only for data.vocab = "bpe", not "gpt2"`}},
	{"", []string{"data.vocab_size=1.5"}, []string{`data.vocab_size = 1.5: want an integer`}},
	{"", []string{"optimizer.decay=biases"}, []string{`optimizer.decay = "biases": want one of all, matrices`}},
	{"", []string{"schedule.min_lr=0.01"}, []string{`schedule.min_lr = 0.01: only used by schedule.type = "cosine", not "constant"`}},
	{"", []string{"schedule.type=cosine", "schedule.min_lr=1"}, []string{`schedule.min_lr = 1: must be in [0, optimizer.lr = 0.05]`}},
	{"", []string{"schedule.type=cosine", "schedule.min_lr=-1e-4"}, []string{`schedule.min_lr = -0.0001`}},
	{"", []string{"model.layers.0.heads=2"}, []string{`model.layers[0].heads = 2: not a key of a linear layer`}},
	{"", []string{"model.layers.1.tie=true"}, []string{`model.layers[1].tie = true: not a key of a relu layer`}},
	{"", []string{`model.layers.1={type="transformer_block"}`}, []string{`model.layers[1].heads: required for a transformer_block layer`}},
	{"", []string{`model.layers.1={type="transformer_block", heads=2, dropout=1.5}`}, []string{`model.layers[1].dropout = 1.5: must be in [0, 1)`}},
	{"", []string{`model.layers.0={type="embedding"}`}, []string{`model.layers[0].dim: required for an embedding layer`}},
	{"data = \"digits\"\n" + base, nil, []string{`mlp.toml: data = "digits": want a table`}},
	{"[[data]]\nname = \"digits\"\n" + base, nil, []string{`mlp.toml: data = [{name = "digits"}]: want a table`}},

	// [model]
	{"", []string{"model.recompute=layers"}, []string{`model.recompute = "layers": want one of none, attention, blocks`}},
	{"", []string{"model.recompute="}, []string{`model.recompute = "": want one of none, attention, blocks`}},
	{"[model]\nrecompute = 1\n" + base, nil, []string{`mlp.toml: model.recompute = 1: want a string`}},
	{"", []string{"model.layers.1.recompute=blocks"}, []string{`unknown key "model.layers[1].recompute"`}}, // model-wide, not a layer key

	// [[model.layers]]
	{"[pipeline]\nschedule = \"sequential\"\n", nil, []string{`model.layers: at least one layer is required`}},
	{"", []string{"model.layers=[]"}, []string{`model.layers: at least one layer is required`}},
	{"", []string{"model.layers=3"}, []string{`model.layers = 3: want an array of tables`}},
	{"", []string{"model.layers=[1, 2]"}, []string{`model.layers = [1, 2]: want an array of tables`}},
	{"", []string{"model.layers.0={units=3}"}, []string{`model.layers[0].type: required`}},
	{"", []string{"model.layers.1.type=conv2d"}, []string{`model.layers[1].channels: required for a conv2d layer`}},
	{"", []string{"model.layers.1.type=conv2d", "model.layers.1.channels=4"}, []string{`model.layers[1].kernel: required for a conv2d layer`}},
	{"", []string{"model.layers.1.type=conv2d", "model.layers.1.channels=4", "model.layers.1.kernel=3", "model.layers.1.stride=0"}, []string{`model.layers[1].stride = 0`}},
	{"", []string{"model.layers.1.type=conv2d", "model.layers.1.channels=4", "model.layers.1.kernel=3", "model.layers.1.padding=-1"}, []string{`model.layers[1].padding = -1`}},
	{"", []string{"model.layers.1.type=maxpool2d"}, []string{`model.layers[1].kernel: required for a maxpool2d layer`}},
	{"", []string{"model.layers.1.type=avgpool2d", "model.layers.1.kernel=2", "model.layers.1.units=3"}, []string{`model.layers[1].units = 3: not a key of a avgpool2d layer`}},
	{"", []string{"model.layers.1.kernel=3"}, []string{`model.layers[1].kernel = 3: not a key of a relu layer`}},
	{"", []string{"model.layers.1.type=batchnorm", "model.layers.1.eps=0"}, []string{`model.layers[1].eps = 0: must be > 0`}},
	{"", []string{"model.layers.1.type=batchnorm", "model.layers.1.momentum=1.5"}, []string{`model.layers[1].momentum = 1.5: must be in (0, 1]`}},
	{"", []string{"model.layers.1.type=batchnorm", "model.layers.1.momentum=0"}, []string{`model.layers[1].momentum = 0: must be in (0, 1]`}},
	{"", []string{"model.layers.1.type=conv2d", "model.layers.1.channels=4", "model.layers.1.kernel=3", "model.layers.1.shards=5"}, []string{`model.layers[1].shards = 5: more than channels = 4`}},
	{"", []string{"model.layers.1.type=maxpool2d", "model.layers.1.kernel=2", "model.layers.1.shards=2"}, []string{`model.layers[1].shards = 2: not a key of a maxpool2d layer (it takes keys type, kernel, stride)`}},
	{"", []string{"model.layers.1.momentum=0.5"}, []string{`model.layers[1].momentum = 0.5: not a key of a relu layer`}},
	{"", []string{"model.layers.1.type=conv9d"}, []string{`model.layers[1].type = "conv9d": want one of linear, relu`}},
	{"", []string{`model.layers.0={type="linear"}`}, []string{`model.layers[0].units: required for a linear layer`}},
	{"", []string{"model.layers.0.units=0"}, []string{`model.layers[0].units = 0: must be at least 1`}},
	{"", []string{"model.layers.0.units=-5"}, []string{`model.layers[0].units = -5`}},
	{"", []string{"model.layers.0.units=many"}, []string{`model.layers[0].units = "many": want an integer`}},
	{"", []string{"model.layers.0.init=glorot"}, []string{`model.layers[0].init = "glorot": want one of xavier_uniform, xavier_normal, he_uniform, he_normal, torch_default`}},
	{"", []string{"data.validation_fraction=1"}, []string{`data.validation_fraction = 1: must be in [0, 1)`}},
	{"", []string{"train.early_stop=2"}, []string{`train.early_stop = 2 needs a validation split`}},
	{"", []string{"train.early_stop=-1", "data.validation_fraction=0.1"}, []string{`train.early_stop = -1: must be at least 0`}},
	{"", []string{"train.precision=fp16"}, []string{`train.precision = "fp16": want one of fp32, bf16`}},
	{"", []string{"train.precision=BF16"}, []string{`train.precision = "BF16": want one of fp32, bf16`}},
	{"", []string{"train.bf16_arithmetic=amx-fma"}, []string{`train.bf16_arithmetic = "amx-fma": want one of auto, amx, avx512bf16`}},
	{"", []string{"train.restarts=-1"}, []string{`train.restarts = -1: must be at least 0`}},
	{"", []string{"train.snapshot_every=-5"}, []string{`train.snapshot_every = -5: must be at least 0`}},
	{"", []string{"train.restart_wait=30"}, []string{`train.restart_wait = "30": want a positive duration`}},
	{"", []string{"train.restart_wait=-1s"}, []string{`train.restart_wait = "-1s": want a positive duration`}},
	{"", []string{"pipeline.hosts_min=1"}, []string{`pipeline.hosts_min = 1 exceeds the 0 pipeline.hosts`}},
	{"", []string{"pipeline.listen=7100"}, []string{`pipeline.listen = "7100": not a host:port`}},
	{"", []string{"pipeline.listen=0.0.0.0:70000"}, []string{`pipeline.listen = "0.0.0.0:70000": port "70000": want a number in 0..65535`}},
	{"", []string{"pipeline.advertise=10.0.0.1:0"}, []string{`pipeline.advertise = "10.0.0.1:0": port "0": want a number in 1..65535`}},
	{"", []string{"log.metrics=9090"}, []string{`log.metrics = "9090": want HOST:PORT`}},
	{"", []string{"model.layers.0.shards=0"}, []string{`model.layers[0].shards = 0: must be at least 1`}},
	{"", []string{"model.layers.0.shards=64"}, []string{`model.layers[0].shards = 64: more than units = 32`}},
	{"", []string{"model.layers.1.units=5"}, []string{`model.layers[1].units = 5: not a key of a relu layer (it takes only type)`}},
	{"", []string{"model.layers.1.shards=1"}, []string{`model.layers[1].shards = 1: not a key of a relu layer`}},
	{"", []string{"model.layers.1.init=xavier_uniform"}, []string{`model.layers[1].init = "xavier_uniform": not a key of a relu layer`}},
	{"", []string{"model.layers.0.p=0.5"}, []string{`model.layers[0].p = 0.5: not a key of a linear layer (it takes keys type, units, init, tie, bias, shards)`}},
	{"", []string{"model.layers.0.alpha=0.2"}, []string{`model.layers[0].alpha = 0.2: not a key of a linear layer`}},
	{"", []string{"model.layers.0.approximate=false"}, []string{`model.layers[0].approximate = false: not a key of a linear layer`}},
	{"", []string{`model.layers.1={type="dropout", units=3}`}, []string{`model.layers[1].units = 3: not a key of a dropout layer (it takes keys type, p)`}},
	{"", []string{`model.layers.1={type="prelu", alpha=0.25}`}, []string{`model.layers[1].alpha = 0.25: not a key of a prelu layer`}},
	{"", []string{`model.layers.1={type="dropout", p=1}`}, []string{`model.layers[1].p = 1: must be in [0, 1)`}},
	{"", []string{`model.layers.1={type="dropout", p=-0.1}`}, []string{`model.layers[1].p = -0.1`}},
	{"", []string{`model.layers.1={type="dropout", p=nan}`}, []string{`model.layers[1].p = nan: must be a finite number`}},
	{"", []string{`model.layers.1={type="leaky_relu", alpha=-1}`}, []string{`model.layers[1].alpha = -1: must be >= 0`}},
	{"", []string{`model.layers.1={type="leaky_relu", alpha=inf}`}, []string{`model.layers[1].alpha = inf: must be a finite number`}},
	{"", []string{`model.layers.1={type="gelu", approximate="yes"}`}, []string{`model.layers[1].approximate = "yes": want true or false`}},
	{"", []string{`model.layers.1=relu`}, []string{`model.layers[1] = "relu": want a table`}},
	{base + "[[model.layers]]\ntype = \"linear\"\nunits = 10\nactivation = \"relu\"\n", nil, []string{`mlp.toml: unknown key "model.layers[3].activation"`}},
	{base + "[[model.layers]]\ntype = \"linear\"\nunits = \"ten\"\n", nil, []string{`mlp.toml: model.layers[3].units = "ten": want an integer`}},

	// [loss]
	{"", []string{"loss.type=hinge"}, []string{`loss.type = "hinge": want one of cross_entropy, mse, bce_with_logits`}},
	{"", []string{"loss.type=3"}, []string{`loss.type = "3"`}},
	{"", []string{"loss=mse"}, []string{`loss = "mse": want a table`}},

	// [optimizer]
	{"", []string{"optimizer.type=rmsprop"}, []string{`optimizer.type = "rmsprop": want one of sgd, adam, adamw`}},
	{"", []string{"optimizer.lr=0"}, []string{`optimizer.lr = 0: must be > 0`}},
	{"", []string{"optimizer.lr=-1"}, []string{`optimizer.lr = -1`}},
	{"", []string{"optimizer.lr=inf"}, []string{`optimizer.lr = inf: must be a finite number`}},
	{"", []string{"optimizer.lr=nan"}, []string{`optimizer.lr = nan`}},
	{"", []string{"optimizer.lr=fast"}, []string{`--set "optimizer.lr=fast"`, `optimizer.lr = "fast": want a number`}},
	{base + "[optimizer]\nlr = \"fast\"\n", nil, []string{`mlp.toml: optimizer.lr = "fast": want a number`}},
	{"", []string{"optimizer.momentum=1"}, []string{`optimizer.momentum = 1: must be in [0, 1)`}},
	{"", []string{"optimizer.momentum=-0.5"}, []string{`optimizer.momentum = -0.5`}},
	{"", []string{"optimizer.type=adam", "optimizer.momentum=0.9"}, []string{`optimizer.momentum = 0.9: only used by optimizer.type = "sgd", not "adam"`}},
	{"", []string{"optimizer.nesterov=true"}, []string{`optimizer.nesterov = true: needs optimizer.momentum > 0`}},
	{"", []string{"optimizer.type=adamw", "optimizer.nesterov=true"}, []string{`optimizer.nesterov = true: only used by optimizer.type = "sgd", not "adamw"`}},
	{"", []string{"optimizer.nesterov=1"}, []string{`optimizer.nesterov = 1: want true or false`}},
	{"", []string{"optimizer.weight_decay=-1"}, []string{`optimizer.weight_decay = -1: must be >= 0`}},
	{"", []string{"optimizer.weight_decay=nan"}, []string{`optimizer.weight_decay = nan`}},
	{"", []string{"optimizer.betas=[0.9]"}, []string{`optimizer.betas = [0.9]: want an array of 2 numbers`}},
	{"", []string{"optimizer.betas=[0.9, 0.99, 0.999]"}, []string{`optimizer.betas = [0.9, 0.99, 0.999]`}},
	{"", []string{"optimizer.betas=0.9"}, []string{`optimizer.betas = 0.9: want an array of 2 numbers`}},
	{"", []string{`optimizer.betas=["a", "b"]`}, []string{`optimizer.betas[0] = "a": want a number`}},
	{"", []string{"optimizer.betas=[0.9, 1.0]"}, []string{`optimizer.betas[1] = 1: must be in [0, 1)`}},
	{"", []string{"optimizer.betas=[-0.1, 0.9]"}, []string{`optimizer.betas[0] = -0.1`}},
	{"", []string{"optimizer.betas.1=inf"}, []string{`optimizer.betas[1] = inf: must be a finite number`}},
	{"", []string{"optimizer.eps=0"}, []string{`optimizer.eps = 0: must be > 0`}},
	{"", []string{"optimizer.eps=-1e-8"}, []string{`optimizer.eps = -1e-08`}},
	{"", []string{"optimizer.clip_norm=-1"}, []string{`optimizer.clip_norm = -1: must be >= 0`}},
	{"", []string{"optimizer.clip_norm=inf"}, []string{`optimizer.clip_norm = inf`}},
	{"", []string{"optimizer.clip_value=-0.5"}, []string{`optimizer.clip_value = -0.5: must be >= 0`}},
	{"", []string{"optimizer.clip_value=nan"}, []string{`optimizer.clip_value = nan`}},

	// [schedule]
	{"", []string{"schedule.type=linear"}, []string{`schedule.type = "linear": want one of constant, step, cosine`}},
	{"", []string{"schedule.warmup_steps=-1"}, []string{`schedule.warmup_steps = -1: must be at least 0`}},
	{"", []string{"schedule.warmup_steps=1.5"}, []string{`schedule.warmup_steps = 1.5: want an integer`}},
	{"", []string{"schedule.type=step"}, []string{`schedule.step_size = 0: must be at least 1 for schedule.type = "step"`}},
	{"", []string{"schedule.step_size=-2"}, []string{`schedule.step_size = -2`}},
	{"", []string{"schedule.gamma=0"}, []string{`schedule.gamma = 0: must be in (0, 1]`}},
	{"", []string{"schedule.gamma=1.5"}, []string{`schedule.gamma = 1.5`}},
	{"", []string{"schedule.gamma=-inf"}, []string{`schedule.gamma = -inf: must be a finite number`}},

	// [pipeline]
	{"", []string{"pipeline.schedule=zigzag"}, []string{`pipeline.schedule = "zigzag": want one of auto, sequential, gpipe, 1f1b`}},
	{"", []string{"pipeline.schedule=zigzag"}, []string{`pipeline.schedule`, `zigzag`}},
	{"", []string{"pipeline.micro_batches=0"}, []string{`pipeline.micro_batches = 0: must be at least 1, or "auto"`}},
	{"", []string{"pipeline.micro_batches=-2"}, []string{`pipeline.micro_batches = -2: must be at least 1, or "auto"`}},
	{"", []string{"pipeline.micro_batches=fast"}, []string{`pipeline.micro_batches = "fast": want an integer or "auto"`}},
	{"", []string{"pipeline.micro_batches=1.5"}, []string{`pipeline.micro_batches = 1.5: want an integer or "auto"`}},
	{"", []string{"pipeline.micro_batches=128"}, []string{`pipeline.micro_batches = 128 exceeds data.batch_size = 64`}},
	{"", []string{"pipeline.micro_batches=4", "data.batch_size=2"}, []string{`pipeline.micro_batches = 4 exceeds data.batch_size = 2`}},
	{"", []string{"pipeline.stages=-1"}, []string{`pipeline.stages = -1: must be at least 0`}},
	{"", []string{"pipeline.stages=4"}, []string{`pipeline.stages = 4 exceeds the 3 layers of model.layers`}},
	{"", []string{"pipeline.chunks=-1"}, []string{`pipeline.chunks = -1: must be at least 0`}},
	{"", []string{"pipeline.schedule=1f1b", "pipeline.chunks=2"}, []string{`pipeline.chunks = 2 needs pipeline.schedule = "interleaved" or "zbv", not "1f1b"`}},
	{"", []string{"pipeline.schedule=interleaved", "pipeline.stages=2", "pipeline.chunks=2"}, []string{`pipeline.stages = 2 of pipeline.chunks = 2 positions each need 4 layers; model.layers has 3`}},
	{"", []string{"pipeline.gemm_threads=-1"}, []string{`pipeline.gemm_threads = -1: must be at least 0`}},
	{"", []string{"pipeline.gemm_threads=1.5"}, []string{`pipeline.gemm_threads = 1.5: want an integer`}},
	{"", []string{"pipeline.gemm_threads=auto"}, []string{`pipeline.gemm_threads = "auto": want an integer`}},
	{"", []string{"pipeline.gemm_threads=true"}, []string{`pipeline.gemm_threads = true: want an integer`}},
	{"", []string{"pipeline.split_backward=1"}, []string{`pipeline.split_backward = 1: want true or false`}},
	{"", []string{"pipeline.split_backward=yes"}, []string{`pipeline.split_backward = "yes": want true or false`}},
	{base + "split_backward = \"true\"\n", nil, []string{`mlp.toml: pipeline.split_backward = "true": want true or false`}},
	{"", []string{"pipeline.replicas=0"}, []string{`pipeline.replicas = 0`}},
	{"", []string{"pipeline.replicas=4", "data.batch_size=2"}, []string{`pipeline.replicas = 4 exceeds data.batch_size = 2`}},
	{"", []string{"pipeline.replicas=0", `pipeline.hosts=["h:1"]`}, []string{`pipeline.replicas = 0`}},
	{"", []string{"pipeline.replicas=-2", `pipeline.hosts=["h:1"]`}, []string{`pipeline.replicas = -2`}},
	{"", []string{"pipeline.replicas=4", "data.batch_size=2", `pipeline.hosts=["h:1", "h:2"]`}, []string{`pipeline.replicas = 4 exceeds data.batch_size = 2`}},
	{"", []string{`pipeline.hosts=["nohost"]`}, []string{`pipeline.hosts[0] = "nohost": not a host:port (missing port in address)`}},
	{"", []string{`pipeline.hosts=["h:1", "h:0"]`}, []string{`pipeline.hosts[1] = "h:0": port "0": want a number in 1..65535`}},
	{"", []string{`pipeline.hosts=["h:70000"]`}, []string{`pipeline.hosts[0] = "h:70000"`, "1..65535"}},
	{"", []string{`pipeline.hosts=["h:-1"]`}, []string{`pipeline.hosts[0] = "h:-1"`, "1..65535"}},
	{"", []string{`pipeline.hosts=["h:http"]`}, []string{`pipeline.hosts[0] = "h:http"`}},
	{"", []string{`pipeline.hosts=["h:"]`}, []string{`pipeline.hosts[0] = "h:"`, "1..65535"}},
	{"", []string{`pipeline.hosts=[":7101"]`}, []string{`pipeline.hosts[0] = ":7101": not a host:port (missing host)`}},
	{"", []string{`pipeline.hosts=["::1:7101"]`}, []string{`pipeline.hosts[0] = "::1:7101": not a host:port (too many colons in address)`}},
	{"", []string{`pipeline.hosts=["a:1", "b:2", "a:1"]`}, []string{`pipeline.hosts[2] = "a:1": the same host as pipeline.hosts[0]`}},
	{"", []string{`pipeline.hosts=a:1`}, []string{`pipeline.hosts = "a:1": want an array of strings`}},
	{"", []string{`pipeline.hosts=[7101]`}, []string{`pipeline.hosts[0] = 7101: want a string`}},
	{base + "nodes = []\n", nil, []string{`mlp.toml: pipeline.nodes was renamed pipeline.hosts`}},
	{base + "nodes = [\"127.0.0.1:7101\"]\n", nil, []string{`mlp.toml: pipeline.nodes was renamed pipeline.hosts`}},
	{"", []string{`pipeline.nodes=["127.0.0.1:7101"]`}, []string{`--set "pipeline.nodes=[\"127.0.0.1:7101\"]": pipeline.nodes was renamed pipeline.hosts`}},
	{"", []string{"pipeline.nodes.0=a:1"}, []string{`pipeline.nodes was renamed pipeline.hosts`}},

	// [train]
	{"", []string{"train.epochs=0"}, []string{`train.epochs = 0: must be at least 1`}},
	{"", []string{"train.epochs=true"}, []string{`train.epochs = true: want an integer`}},
	{"", []string{"train.max_steps=-1"}, []string{`train.max_steps = -1: must be at least 0`}},
	{"", []string{"train.eval_every=-1"}, []string{`train.eval_every = -1: must be at least 0`}},
	{"", []string{"train.checkpoint_dir="}, []string{`train.checkpoint_dir = "": must not be empty`}},
	{"", []string{`train.checkpoint_dir=""`}, []string{`train.checkpoint_dir = ""`}},
	{"", []string{"train.checkpoint_every=-10"}, []string{`train.checkpoint_every = -10: must be at least 0`}},

	// [log]
	{"", []string{"log.dir="}, []string{`log.dir = "": must not be empty`}},
	{"", []string{"log.every=0"}, []string{`log.every = 0: must be at least 1`}},
	{"", []string{"log.every=ten"}, []string{`log.every = "ten": want an integer`}},
	{base + "[log]\ntrace = 5\n", nil, []string{`mlp.toml: log.trace = 5: want a string`}},

	// Malformed --set.
	{"", []string{"optimizer.lr"}, []string{`--set "optimizer.lr": want KEY=VALUE`}},
	{"", []string{"=1"}, []string{`--set "=1": empty key`}},
	{"", []string{"optimizer.lrr=1"}, []string{`--set "optimizer.lrr=1": unknown key "optimizer.lrr"`}},
	{"", []string{"nope=1"}, []string{`--set "nope=1": unknown key "nope"`}},
	{"", []string{"optimizer..lr=1"}, []string{`--set "optimizer..lr=1": key "optimizer..lr" has an empty part`}},
	{"", []string{"model.layers.5.units=3"}, []string{`--set "model.layers.5.units=3": index 5 out of range: model.layers has 3 elements`}},
	{"", []string{"model.layers.-1.units=3"}, []string{`--set "model.layers.-1.units=3": unknown key "model.layers.-1"`}},
	{"", []string{"model.layers.units=3"}, []string{`unknown key "model.layers.units": model.layers is an array; address an element by its index, e.g. model.layers.0`}},
	{"", []string{"optimizer.betas.2=0.5"}, []string{`--set "optimizer.betas.2=0.5": index 2 out of range: optimizer.betas has 2 elements`}},
	{"", []string{"pipeline.hosts.0=a:1"}, []string{`index 0 out of range: pipeline.hosts has 0 elements`}},
	{"", []string{"seed.x=1"}, []string{`unknown key "seed.x"`}},
	{"", []string{"seed=1", "optimizer.lr=0.1", "train.epochs=zero"}, []string{`--set "train.epochs=zero": train.epochs = "zero"`}},
}

func TestBadConfigs(t *testing.T) {
	if len(badConfigs) < 60 {
		t.Errorf("the corpus has %d bad configs, want at least 60", len(badConfigs))
	}
	for _, tc := range badConfigs {
		file := tc.file
		if file == "" {
			file = base
		}
		_, err := Parse("mlp.toml", []byte(file), tc.sets)
		if err == nil {
			t.Errorf("Parse(%q, %q): got no error, want one containing %q", file, tc.sets, tc.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "config: ") {
			t.Errorf("Parse(%q, %q): got %q, want it to start %q", file, tc.sets, err, "config: ")
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q, %q): got %q, want one line", file, tc.sets, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q, %q): got %q, want it to contain %q", file, tc.sets, err, w)
			}
		}
	}
}
