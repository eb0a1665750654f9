// Command scaling measures what a second core buys when training a deep MLP
// (784-1024-1024-1024-10, batch 256, real MNIST): the actor pipeline against
// the best one-core configuration and against one actor whose GEMMs use both
// cores.
//
//	go build -o /tmp/train ./cmd/train
//	go run ./bench/scaling -train /tmp/train -data /data/mnist -rounds 3
//
// -only REGEX runs a subset (the baseline and two-core sequential always
// run), so that more rounds of a few rows fit in the same time:
// -only '^1 core' -rounds 7 for the one-core rows.
//
// The baseline is the fastest way to train on one core: the sequential
// schedule, one stage, no micro-batches. The ceiling row runs that baseline
// twice at once, as two independent processes, and adds their figures: what
// two cores of this machine give with nothing shared but the memory. The
// replica rows run two copies of the chain in one process, each on half of
// the mini-batch's chunks, with one copy of the weights. The
// one-core rows with 8 micro-batches show what micro-batching costs there. Every setting goes to
// train as --set; GOMAXPROCS is set in the child's environment, being the Go
// runtime's own knob. Each round runs every configuration once, in an order
// that rotates from round to round, so that drift on a noisy machine falls on
// all of them. A run's figure is the median samples_per_sec of its step
// events, the first -warmup of them left out; a configuration's figure is the
// median over rounds.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/pipetrain/pipetrain/bench/internal/deepmlp"
	"github.com/pipetrain/pipetrain/dataset"
)

// hidden are the indices of the hidden linear layers, the ones sharded.
var hidden = []int{0, 2, 4}

type variant struct {
	name       string
	gomaxprocs int
	schedule   string
	stages     int
	micro      int
	shards     int
	gemm       int  // pipeline.gemm_threads; 0 = automatic
	split      bool // pipeline.split_backward
	pair       bool // two independent processes at once, figures added
	replicas   int  // pipeline.replicas; 0 = 1
}

func (v variant) args() []string {
	micro := fmt.Sprint(v.micro)
	if v.micro == 0 {
		micro = "auto"
	}
	a := []string{
		"--set", "pipeline.schedule=" + v.schedule,
		"--set", fmt.Sprintf("pipeline.stages=%d", v.stages),
		"--set", "pipeline.micro_batches=" + micro,
		"--set", fmt.Sprintf("pipeline.gemm_threads=%d", v.gemm),
		"--set", fmt.Sprintf("pipeline.split_backward=%v", v.split),
		"--set", fmt.Sprintf("pipeline.replicas=%d", max(1, v.replicas)),
	}
	for _, i := range hidden {
		a = append(a, "--set", fmt.Sprintf("model.layers.%d.shards=%d", i, v.shards))
	}
	return a
}

// The first row is the baseline, the fourth two-core sequential.
var allVariants = []variant{
	{"1 core: sequential, stages=1, micro=1", 1, "sequential", 1, 1, 1, 1, false, false, 0},
	{"1 core: sequential, stages=1, micro=8", 1, "sequential", 1, 8, 1, 1, false, false, 0},
	{"1 core: sequential, stages=1, micro=8, split", 1, "sequential", 1, 8, 1, 1, true, false, 0},
	{"2 cores: sequential, stages=1, micro=1", 2, "sequential", 1, 1, 1, 2, false, false, 0},
	{"1 core: sequential, stages=0, micro=8, split", 1, "sequential", 0, 8, 1, 1, true, false, 0},
	{"2 cores: 1f1b, stages=0, micro=8", 2, "1f1b", 0, 8, 1, 0, false, false, 0},
	{"2 cores: 1f1b, stages=0, micro=8, split", 2, "1f1b", 0, 8, 1, 0, true, false, 0},
	{"2 cores: 1f1b, stages=0, micro=4, split", 2, "1f1b", 0, 4, 1, 0, true, false, 0},
	{"2 cores: 1f1b, stages=2, micro=8, split", 2, "1f1b", 2, 8, 1, 0, true, false, 0},
	{"2 cores: 1f1b, stages=0, micro=8, shards=2, split", 2, "1f1b", 0, 8, 2, 0, true, false, 0},
	{"2 cores: auto (schedule, micro_batches)", 2, "auto", 0, 0, 1, 0, false, false, 0},
	{"2 cores: sequential, stages=1, micro=1, replicas=2", 2, "sequential", 1, 1, 1, 0, false, false, 2},
	{"2 cores: sequential, stages=0, micro=1, replicas=2", 2, "sequential", 0, 1, 1, 0, false, false, 2},
	{"2 cores: 1f1b, stages=0, micro=2, split, replicas=2", 2, "1f1b", 0, 2, 1, 0, true, false, 2},
	{"ceiling: two 1-core baseline runs at once", 1, "sequential", 1, 1, 1, 1, false, true, 0},
}

const twoCoreSeq = 3 // index in allVariants

// options are the command's flags, checked.
type options struct {
	train, data           string // the binary; the MNIST folder, absolute
	rounds, steps, warmup int
	only                  *regexp.Regexp
}

func main() {
	o := parseOptions()
	variants, seq2 := pick(o.only)
	if runtime.NumCPU() < 2 {
		fmt.Fprintf(os.Stderr, "scaling: warning: %d CPU; the two-core rows share it\n", runtime.NumCPU())
	}
	if o.rounds < 3 {
		fmt.Fprintf(os.Stderr, "scaling: warning: %d rounds; report medians of at least 3\n", o.rounds)
	}
	dir, err := os.MkdirTemp("", "scaling")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "deep.toml")
	if err := os.WriteFile(cfg, []byte(deepmlp.Model), 0o644); err != nil {
		fail(err)
	}

	loadBefore := loadavg()
	runs := make([][]float64, len(variants)) // samples/s of each round
	busy := make([]string, len(variants))    // of the last round
	for r := range o.rounds {
		for j := range variants {
			i := (j + r) % len(variants)
			v := variants[i]
			var sum float64
			sum, busy[i] = run(o, v, cfg, filepath.Join(dir, fmt.Sprintf("logs-%d-%d", i, r)), filepath.Join(dir, "ck"))
			runs[i] = append(runs[i], sum)
			fmt.Fprintf(os.Stderr, "round %d/%d: %-44s %8.0f samples/s\n", r+1, o.rounds, v.name, sum)
		}
	}
	report(o, variants, seq2, runs, busy, loadBefore)
}

// parseOptions reads and checks the flags, exiting with a usage message
// when one is wrong.
func parseOptions() options {
	train := flag.String("train", "/tmp/train", "the train binary (go build -o /tmp/train ./cmd/train)")
	data := flag.String("data", "", "folder with the four MNIST IDX .gz files (required)")
	rounds := flag.Int("rounds", 3, "rounds; each runs every configuration once")
	steps := flag.Int("steps", 60, "optimizer steps per run (a step event every 5)")
	warmup := flag.Int("warmup", 2, "step events left out at the start of each run")
	only := flag.String("only", "", "run only the configurations whose names match this regular expression, besides the one-core baseline and two-core sequential")
	flag.Parse()
	match, err := regexp.Compile(*only)
	if err != nil {
		usage(fmt.Sprintf("-only: %v", err))
	}
	if *data == "" {
		usage("-data DIR is required: the folder of the MNIST IDX files")
	}
	if *rounds < 1 || *steps < 1 || *warmup < 0 {
		usage("-rounds and -steps must be at least 1, -warmup at least 0")
	}
	if *steps/5 <= *warmup {
		usage(fmt.Sprintf("-steps %d gives %d step events, none left after -warmup %d", *steps, *steps/5, *warmup))
	}
	if _, err := os.Stat(*train); err != nil {
		usage(fmt.Sprintf("no train binary at %s (go build -o %s ./cmd/train): %v", *train, *train, err))
	}
	for _, f := range []string{dataset.TrainImagesFile, dataset.TrainLabelsFile, dataset.TestImagesFile, dataset.TestLabelsFile} {
		if _, err := os.Stat(filepath.Join(*data, f)); err != nil {
			usage(fmt.Sprintf("MNIST not found: %v (point -data at a folder with the four IDX .gz files)", err))
		}
	}
	abs, err := filepath.Abs(*data)
	if err != nil {
		fail(err)
	}
	return options{train: *train, data: abs, rounds: *rounds, steps: *steps, warmup: *warmup, only: match}
}

// pick returns the configurations to run, the baseline and two-core
// sequential always among them, and two-core sequential's index.
func pick(match *regexp.Regexp) ([]variant, int) {
	var variants []variant
	seq2 := 0
	for i, v := range allVariants {
		if i == twoCoreSeq {
			seq2 = len(variants)
		}
		if i == 0 || i == twoCoreSeq || match.MatchString(v.name) {
			variants = append(variants, v)
		}
	}
	return variants, seq2
}

// run trains once in configuration v (twice at once for a pair), logging
// under logDir, and returns the samples/s (added over a pair) and the
// stage busy fractions.
func run(o options, v variant, cfg, logDir, ckDir string) (float64, string) {
	copies := 1
	if v.pair {
		copies = 2
	}
	errs := make(chan error, copies)
	for c := range copies {
		// Each copy logs and checkpoints into a folder of its own.
		args := append([]string{"--config", cfg, "--log-format", "json",
			"--set", "data.path=" + o.data, "--set", fmt.Sprintf("train.max_steps=%d", o.steps),
			"--set", fmt.Sprintf("log.dir=%s/%d", logDir, c),
			"--set", fmt.Sprintf("train.checkpoint_dir=%s/%d", ckDir, c)},
			v.args()...)
		cmd := exec.Command(o.train, args...)
		cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", v.gomaxprocs))
		go func() {
			out, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%s: %v\n%s", v.name, err, out)
			}
			errs <- err
		}()
	}
	for range copies {
		if err := <-errs; err != nil {
			fail(err)
		}
	}
	sum, busy := 0.0, ""
	for c := range copies {
		tput, b := readLog(filepath.Join(logDir, fmt.Sprint(c)), o.warmup)
		sum += deepmlp.Median(tput)
		busy = b
	}
	return sum, busy
}

// report prints the table: each configuration's median against the best
// one-core row and two-core sequential.
func report(o options, variants []variant, seq2 int, runs [][]float64, busy []string, loadBefore string) {
	meds := make([]float64, len(variants))
	best1 := 0 // the fastest one-core row
	for i, v := range variants {
		meds[i] = deepmlp.Median(runs[i])
		if v.gomaxprocs == 1 && !v.pair && meds[i] > meds[best1] {
			best1 = i
		}
	}
	fmt.Printf("784-1024-1024-1024-10, batch 256, MNIST, %d steps a run, medians of %d rounds\n", o.steps, o.rounds)
	fmt.Printf("best one-core: %s; two-core sequential: %s\n", variants[best1].name, variants[seq2].name)
	// Other work on the machine falls hardest on the two-core rows.
	fmt.Printf("1-minute load average before: %s, after: %s\n\n", loadBefore, loadavg())
	fmt.Printf("| %-44s | %9s | %8s | %8s | %-30s | %s |\n", "configuration", "samples/s", "/ 1-core", "/ 2c seq", "rounds", "stage busy fractions")
	fmt.Printf("| %s | %s:| %s:| %s:| %s | %s |\n", strings.Repeat("-", 44), strings.Repeat("-", 9), strings.Repeat("-", 8), strings.Repeat("-", 8), strings.Repeat("-", 30), strings.Repeat("-", 20))
	for i, v := range variants {
		rs := make([]string, len(runs[i]))
		for k, x := range runs[i] {
			rs[k] = fmt.Sprintf("%.0f", x)
		}
		fmt.Printf("| %-44s | %9.0f | %7.2fx | %7.2fx | %-30s | %s |\n", v.name, meds[i],
			meds[i]/meds[best1], meds[i]/meds[seq2], strings.Join(rs, " "), busy[i])
	}
}

// readLog returns a run's step throughputs after the first warmup step events
// and the busy fractions of its last set of stage events.
func readLog(dir string, warmup int) ([]float64, string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		fail(fmt.Errorf("%s: %d log files, want 1", dir, len(files)))
	}
	var tput []float64
	var busy []string
	err := deepmlp.ScanLog(files[0], func(line []byte) error {
		var ev struct {
			Event   string  `json:"event"`
			Samples float64 `json:"samples_per_sec"`
			Stage   int     `json:"stage"`
			Shard   int     `json:"shard"`
			Busy    float64 `json:"busy_fraction"`
		}
		if json.Unmarshal(line, &ev) != nil {
			return nil
		}
		switch ev.Event {
		case "step":
			tput = append(tput, ev.Samples)
		case "stage":
			if ev.Stage == 0 && ev.Shard == 0 {
				busy = nil // a new set of stage events begins
			}
			busy = append(busy, fmt.Sprintf("%.2f", ev.Busy))
		}
		return nil
	})
	if err != nil {
		fail(err)
	}
	if len(tput) <= warmup {
		fail(fmt.Errorf("%s: %d step events, none left after %d of warm-up", files[0], len(tput), warmup))
	}
	return tput[warmup:], strings.Join(busy, " ")
}

// loadavg returns the 1-minute load average, or "?" where there is no
// /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func usage(msg string) {
	fmt.Fprintln(os.Stderr, "scaling:", msg)
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scaling:", err)
	os.Exit(1)
}
