// Command remote measures what spreading stages over worker processes costs:
// the deep MLP of bench/scaling (784-1024-1024-1024-10, batch 256, real
// MNIST) at stages = 2 under 1f1b, in one process and over two `train
// worker` processes on 127.0.0.1, the three processes sharing this
// machine's cores.
//
//	go build -o /tmp/train ./cmd/train
//	go run ./bench/remote -train /tmp/train -data /data/mnist -rounds 3
//
// Each round runs every configuration once, in an order that rotates from
// round to round; a run's figure is the median samples_per_sec of its step
// events after the first -warmup, a configuration's the median over rounds.
// The workers are started once, on free ports, and killed at the end. The
// bytes each stage sent to other processes come from its stage events.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pipetrain/pipetrain/bench/internal/deepmlp"
)

type variant struct {
	name   string
	micro  int
	split  bool
	gemm   int // pipeline.gemm_threads
	remote bool
}

// Each two-worker row follows the one-process row it is compared with.
var variants = []variant{
	{"one process: 1f1b, stages=2, micro=1", 1, false, 0, false},
	{"two workers: 1f1b, stages=2, micro=1", 1, false, 0, true},
	{"one process: 1f1b, stages=2, micro=2", 2, false, 0, false},
	{"two workers: 1f1b, stages=2, micro=2", 2, false, 0, true},
	{"one process: 1f1b, stages=2, micro=8, split", 8, true, 0, false},
	{"two workers: 1f1b, stages=2, micro=8, split", 8, true, 0, true},
	{"two workers: same, gemm_threads=1", 8, true, 1, true},
}

func main() {
	train := flag.String("train", "/tmp/train", "the train binary (go build -o /tmp/train ./cmd/train)")
	data := flag.String("data", "", "folder with the four MNIST IDX .gz files (required)")
	rounds := flag.Int("rounds", 3, "rounds; each runs every configuration once")
	steps := flag.Int("steps", 60, "optimizer steps per run (a step event every 5)")
	warmup := flag.Int("warmup", 2, "step events left out at the start of each run")
	flag.Parse()
	if *data == "" {
		check(errors.New("-data DIR is required: the folder of the MNIST IDX files"))
	}
	data2, err := filepath.Abs(*data)
	check(err)
	dir, err := os.MkdirTemp("", "remote")
	check(err)
	defer os.RemoveAll(dir)
	atExit = append(atExit, func() { os.RemoveAll(dir) })
	cfg := filepath.Join(dir, "deep.toml")
	check(os.WriteFile(cfg, []byte(deepmlp.Model), 0o644))

	hosts, stop := startWorkers(*train, dir)
	defer stop()

	runs := make([][]float64, len(variants))
	wire := make([]float64, len(variants)) // bytes the stages sent per step, last round
	for r := range *rounds {
		for j := range variants {
			i := (j + r) % len(variants)
			v := variants[i]
			logDir := filepath.Join(dir, fmt.Sprintf("logs-%d-%d", i, r))
			args := []string{"--config", cfg, "--log-format", "json",
				"--set", "data.path=" + data2, "--set", fmt.Sprintf("train.max_steps=%d", *steps),
				"--set", "log.dir=" + logDir, "--set", "train.checkpoint_dir=" + filepath.Join(dir, "ck"),
				"--set", "pipeline.schedule=1f1b", "--set", "pipeline.stages=2",
				"--set", fmt.Sprintf("pipeline.micro_batches=%d", v.micro), "--set", fmt.Sprintf("pipeline.split_backward=%v", v.split),
				"--set", fmt.Sprintf("pipeline.gemm_threads=%d", v.gemm)}
			if v.remote {
				args = append(args, "--set", "pipeline.hosts=["+strings.Join(hosts, ", ")+"]")
			}
			if out, err := exec.Command(*train, args...).CombinedOutput(); err != nil {
				check(fmt.Errorf("%s: %v\n%s", v.name, err, out))
			}
			tput, bytes := readLog(logDir, *warmup)
			runs[i] = append(runs[i], deepmlp.Median(tput))
			wire[i] = bytes / float64(*steps)
			fmt.Fprintf(os.Stderr, "round %d/%d: %-46s %8.0f samples/s\n", r+1, *rounds, v.name, deepmlp.Median(tput))
		}
	}
	report(*steps, *rounds, hosts, runs, wire)
}

// report prints each configuration's median, the two-worker rows against
// the one-process row above them.
func report(steps, rounds int, hosts []string, runs [][]float64, wire []float64) {
	fmt.Printf("784-1024-1024-1024-10, batch 256, MNIST, %d steps a run, medians of %d rounds; workers %s\n\n", steps, rounds, strings.Join(hosts, ", "))
	fmt.Printf("| %-46s | %9s | %12s | %-24s | %s |\n", "configuration", "samples/s", "/ one process", "rounds", "stage bytes sent per step")
	fmt.Printf("| %s | %s:| %s:| %s | %s:|\n", strings.Repeat("-", 46), strings.Repeat("-", 9), strings.Repeat("-", 12), strings.Repeat("-", 24), strings.Repeat("-", 24))
	for i, v := range variants {
		base := deepmlp.Median(runs[i])
		for k := i; k >= 0; k-- { // the one-process row above
			if !variants[k].remote {
				base = deepmlp.Median(runs[k])
				break
			}
		}
		rs := make([]string, len(runs[i]))
		for k, x := range runs[i] {
			rs[k] = fmt.Sprintf("%.0f", x)
		}
		fmt.Printf("| %-46s | %9.0f | %11.2fx | %-24s | %24.0f |\n", v.name, deepmlp.Median(runs[i]), deepmlp.Median(runs[i])/base, strings.Join(rs, " "), wire[i])
	}
}

// startWorkers starts two `train worker` processes on free loopback ports
// and returns their addresses, quoted for a TOML list, and what stops them.
func startWorkers(train, dir string) ([]string, func()) {
	var hosts []string
	var procs []*exec.Cmd
	stop := func() {
		for _, w := range procs {
			_ = w.Process.Kill()
			_ = w.Wait()
		}
		procs = nil
	}
	atExit = append(atExit, stop)
	for i := range 2 {
		w := exec.Command(train, "worker", "--listen", "127.0.0.1:0", "--log-dir", filepath.Join(dir, fmt.Sprint("worker", i)))
		out, err := w.StdoutPipe()
		check(err)
		check(w.Start())
		procs = append(procs, w)
		line := make(chan string, 1)
		go func() {
			s, _ := bufio.NewReader(out).ReadString('\n')
			line <- strings.TrimSpace(strings.TrimPrefix(s, "listening on "))
		}()
		select {
		case h := <-line:
			if _, _, err := net.SplitHostPort(h); err != nil {
				check(fmt.Errorf("worker %d printed %q", i, h))
			}
			hosts = append(hosts, fmt.Sprintf("%q", h))
		case <-time.After(20 * time.Second):
			check(fmt.Errorf("worker %d did not start within 20 s", i))
		}
	}
	return hosts, stop
}

// readLog returns a run's step throughputs after the first warmup step
// events, and the bytes its stages sent to other processes.
func readLog(dir string, warmup int) ([]float64, float64) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		check(fmt.Errorf("%s: %d logs", dir, len(files)))
	}
	f, err := os.Open(files[0])
	check(err)
	defer f.Close()
	var tput []float64
	var bytes float64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev map[string]any
		check(json.Unmarshal(sc.Bytes(), &ev))
		switch ev["event"] {
		case "step":
			tput = append(tput, ev["samples_per_sec"].(float64))
		case "stage":
			if b, ok := ev["wire_bytes"].(float64); ok {
				bytes += b
			}
		}
	}
	if len(tput) <= warmup {
		check(fmt.Errorf("%s: %d step events", dir, len(tput)))
	}
	return tput[warmup:], bytes
}

// atExit is what check runs before it exits: os.Exit skips deferred calls,
// and no worker may outlive the command.
var atExit []func()

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "remote:", err)
		for i := len(atExit) - 1; i >= 0; i-- { // as defers run
			atExit[i]()
		}
		os.Exit(1)
	}
}
