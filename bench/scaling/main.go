// Command scaling measures how much faster the actor pipeline trains a deep MLP
// on two cores than the same model under the sequential schedule on one core.
//
//	go build -o /tmp/train ./cmd/train
//	go run ./bench/scaling -train /tmp/train -data ../shared/data/mnist
//
// It runs each configuration -runs times, takes the median of each run's step
// throughput (the first step events, while the pipeline warms up, left out),
// then the median over runs, and prints it with its ratio to the baseline and
// the stages' busy fractions.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

const model = `
seed = 3
[data]
name = "mnist"
batch_size = 256
[[model.layers]]
type = "linear"
units = 1024
shards = %[1]d
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
units = 1024
shards = %[1]d
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
units = 1024
shards = %[1]d
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
units = 10
[optimizer]
type = "sgd"
lr = 0.05
momentum = 0.9
[pipeline]
micro_batches = 8
[train]
epochs = 1
max_steps = %[2]d
checkpoint_every = 100000
eval_every = 100000
[log]
every = 5
`

type variant struct {
	name       string
	gomaxprocs int
	schedule   string
	stages     int
	shards     int
	gemm       string // pipeline.gemm_threads, "" = the pipeline's default
}

func main() {
	train := flag.String("train", "/tmp/train", "the train binary")
	data := flag.String("data", "../shared/data/mnist", "folder with the MNIST IDX files")
	runs := flag.Int("runs", 3, "runs per configuration")
	steps := flag.Int("steps", 60, "optimizer steps per run")
	flag.Parse()
	variants := []variant{
		{"sequential, GOMAXPROCS=1 (baseline)", 1, "sequential", 0, 1, ""},
		{"1f1b, stages=2", 2, "1f1b", 2, 1, ""},
		{"1f1b, stages=0", 2, "1f1b", 0, 1, ""},
		{"1f1b, stages=0, shards=2", 2, "1f1b", 0, 2, ""},
		{"1f1b, stages=2, shards=2", 2, "1f1b", 2, 2, ""},
		{"sequential, GOMAXPROCS=2, 2 GEMM threads", 2, "sequential", 1, 1, "2"},
	}
	dir, err := os.MkdirTemp("", "scaling")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	cfg := func(shards int) string {
		p := filepath.Join(dir, fmt.Sprintf("deep-%d.toml", shards))
		if err := os.WriteFile(p, []byte(fmt.Sprintf(model, shards, *steps)), 0o644); err != nil {
			fail(err)
		}
		return p
	}
	var base float64
	fmt.Printf("%-42s %12s %7s  %s\n", "configuration", "samples/s", "ratio", "stage busy fractions")
	for i, v := range variants {
		var meds []float64
		var busy string
		for r := range *runs {
			logDir := filepath.Join(dir, fmt.Sprintf("logs-%d-%d", i, r))
			cmd := exec.Command(*train, "--config", cfg(v.shards), "--log-format", "json",
				"--set", "data.path="+*data, "--set", "pipeline.schedule="+v.schedule,
				"--set", fmt.Sprintf("pipeline.stages=%d", v.stages),
				"--set", "log.dir="+logDir, "--set", "train.checkpoint_dir="+filepath.Join(dir, "ck"))
			if v.gemm != "" {
				cmd.Args = append(cmd.Args, "--set", "pipeline.gemm_threads="+v.gemm)
			}
			cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", v.gomaxprocs))
			if out, err := cmd.CombinedOutput(); err != nil {
				fail(fmt.Errorf("%s: %v\n%s", v.name, err, out))
			}
			tput, b := readLog(logDir)
			meds = append(meds, median(tput))
			busy = b
		}
		m := median(meds)
		if i == 0 {
			base = m
		}
		fmt.Printf("%-42s %12.0f %6.2fx  %s\n", v.name, m, m/base, busy)
	}
}

// readLog returns the step throughputs after the first two step events and the
// busy fractions of the last stage events.
func readLog(dir string) ([]float64, string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		fail(fmt.Errorf("%s: %d log files", dir, len(files)))
	}
	f, err := os.Open(files[0])
	if err != nil {
		fail(err)
	}
	defer f.Close()
	var tput []float64
	var busy []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev["event"] {
		case "step":
			tput = append(tput, ev["samples_per_sec"].(float64))
		case "stage":
			if ev["stage"].(float64) == 0 && (ev["shard"] == nil || ev["shard"].(float64) == 0) {
				busy = nil // a new set of stage events begins
			}
			busy = append(busy, fmt.Sprintf("%.2f", ev["busy_fraction"].(float64)))
		case "run_start":
			busy = nil
		}
	}
	if len(tput) > 3 {
		tput = tput[2:]
	}
	return tput, strings.Join(busy, " ")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scaling:", err)
	os.Exit(1)
}
