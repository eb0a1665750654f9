// Command remote measures what spreading stages over worker processes costs:
// a model at stages = 2 under 1f1b, in one process and over two `train
// worker` processes on 127.0.0.1, the three processes sharing this
// machine's cores: the deep MLP of bench/scaling (784-1024-1024-1024-10,
// batch 256), or with -config another model on MNIST (configs/mnist.toml:
// 784-512-256-10, batch 128), with no evaluation or checkpoint in a run.
//
//	go build -o /tmp/train ./cmd/train
//	go run ./bench/remote -train /tmp/train -data /data/mnist -rounds 3
//	go run ./bench/remote -train /tmp/train -data /data/mnist -config configs/mnist.toml -steps 400 -every 10 -warmup 3 -rounds 7
//	go run ./bench/remote ... -worker-procs 1   # each worker with GOMAXPROCS=1
//	go run ./bench/remote ... -replicas          # 2 replicas of 1 stage instead
//
// Each round runs every configuration once, in an order that rotates from
// round to round; a run's figure is the median samples_per_sec of its step
// events after the first -warmup, a configuration's the median over rounds.
// The CPU time a step is that of every process of the run (the coordinator,
// and the workers for a run on them) between the first step event counted
// and the last, from the kernel's per-process counters (/proc/PID/stat's
// utime and stime, what getrusage reports), over the steps between; so are
// the bytes they wrote (/proc/PID/io's wchar: sockets on both planes, and
// the logs). The workers are started once, on free ports, and killed at
// the end. The bytes each stage sent to other processes come from its
// stage events.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

	sched            string // pipeline.schedule; "": 1f1b
	stages, replicas int    // 0: 2 stages, 1 replica
}

// Each two-worker row follows the one-process row it is compared with.
var deepVariants = []variant{
	{name: "one process: 1f1b, stages=2, micro=1", micro: 1},
	{name: "two workers: 1f1b, stages=2, micro=1", micro: 1, remote: true},
	{name: "one process: 1f1b, stages=2, micro=2", micro: 2},
	{name: "two workers: 1f1b, stages=2, micro=2", micro: 2, remote: true},
	{name: "one process: 1f1b, stages=2, micro=8, split", micro: 8, split: true},
	{name: "two workers: 1f1b, stages=2, micro=8, split", micro: 8, split: true, remote: true},
	{name: "two workers: same, gemm_threads=1", micro: 8, split: true, gemm: 1, remote: true},
}

var configVariants = []variant{
	{name: "one process: 1f1b, stages=2, micro=1", micro: 1},
	{name: "two workers: 1f1b, stages=2, micro=1", micro: 1, remote: true},
	{name: "two workers: same, gemm_threads=1", micro: 1, gemm: 1, remote: true},
	{name: "one process: 1f1b, stages=2, micro=8", micro: 8},
	{name: "two workers: 1f1b, stages=2, micro=8", micro: 8, remote: true},
	{name: "two workers: same, gemm_threads=1", micro: 8, gemm: 1, remote: true},
}

// Two replicas of one stage each, the deep MLP: their gradient exchange.
var replicaVariants = []variant{
	{name: "one process: 2 replicas of 1 stage", micro: 1, sched: "sequential", stages: 1, replicas: 2},
	{name: "two workers: 2 replicas of 1 stage", micro: 1, sched: "sequential", stages: 1, replicas: 2, remote: true},
	{name: "one process: 2 replicas, micro=2, split", micro: 2, split: true, stages: 1, replicas: 2},
	{name: "two workers: 2 replicas, micro=2, split", micro: 2, split: true, stages: 1, replicas: 2, remote: true},
}

var variants []variant

func main() {
	train := flag.String("train", "/tmp/train", "the train binary (go build -o /tmp/train ./cmd/train)")
	data := flag.String("data", "", "folder with the four MNIST IDX .gz files (required)")
	rounds := flag.Int("rounds", 3, "rounds; each runs every configuration once")
	steps := flag.Int("steps", 60, "optimizer steps per run (a step event every 5)")
	warmup := flag.Int("warmup", 2, "step events left out at the start of each run")
	config := flag.String("config", "", "a config file to measure instead of the deep MLP (configs/mnist.toml), at 1 and 8 micro-batches")
	every := flag.Int("every", 5, "steps between step events")
	workerProcs := flag.Int("worker-procs", 0, "GOMAXPROCS of each worker; 0: the Go runtime's default, every core")
	replicas := flag.Bool("replicas", false, "measure 2 replicas of the deep MLP instead of 2 stages")
	flag.Parse()
	variants = deepVariants
	if *replicas {
		variants = replicaVariants
	}
	text, title := deepmlp.Model, "784-1024-1024-1024-10, batch 256"
	if *config != "" {
		b, err := os.ReadFile(*config)
		check(err)
		variants, text, title = configVariants, string(b), *config
	}
	if *data == "" {
		check(errors.New("-data DIR is required: the folder of the MNIST IDX files"))
	}
	data2, err := filepath.Abs(*data)
	check(err)
	dir, err := os.MkdirTemp("", "remote")
	check(err)
	defer os.RemoveAll(dir)
	atExit = append(atExit, func() { os.RemoveAll(dir) })
	cfg := filepath.Join(dir, "model.toml")
	check(os.WriteFile(cfg, []byte(text), 0o644))

	hosts, pids, stop := startWorkers(*train, dir, *workerProcs)
	defer stop()

	runs := make([][]float64, len(variants))
	cpus := make([][]float64, len(variants)) // CPU seconds a step, every process of the run
	wire := make([]float64, len(variants))   // bytes the stages sent per step, last round
	outs := make([]float64, len(variants))   // bytes every process of the run wrote a step, last round
	for r := range *rounds {
		for j := range variants {
			i := (j + r) % len(variants)
			v := variants[i]
			logDir := filepath.Join(dir, fmt.Sprintf("logs-%d-%d", i, r))
			args := []string{"--config", cfg, "--log-format", "json",
				"--set", "data.path=" + data2, "--set", "data.download=false", "--set", fmt.Sprintf("train.max_steps=%d", *steps),
				"--set", "log.dir=" + logDir, "--set", "train.checkpoint_dir=" + filepath.Join(dir, "ck"),
				"--set", "pipeline.schedule=" + cmp.Or(v.sched, "1f1b"), "--set", fmt.Sprintf("pipeline.stages=%d", cmp.Or(v.stages, 2)),
				"--set", fmt.Sprintf("pipeline.replicas=%d", cmp.Or(v.replicas, 1)),
				"--set", fmt.Sprintf("pipeline.micro_batches=%d", v.micro), "--set", fmt.Sprintf("pipeline.split_backward=%v", v.split),
				"--set", fmt.Sprintf("pipeline.gemm_threads=%d", v.gemm),
				"--set", "train.epochs=1", "--set", "train.eval_every=100000", "--set", "train.checkpoint_every=100000"}
			if v.remote {
				args = append(args, "--set", "pipeline.hosts=["+strings.Join(hosts, ", ")+"]")
			}
			args = append(args, "--set", fmt.Sprintf("log.every=%d", *every))
			var procs []int
			if v.remote {
				procs = pids
			}
			tput, bytes, cpu, out := run(*train, args, procs, *warmup)
			runs[i] = append(runs[i], deepmlp.Median(tput))
			cpus[i] = append(cpus[i], cpu)
			outs[i] = out
			wire[i] = bytes / float64(*steps)
			fmt.Fprintf(os.Stderr, "round %d/%d: %-46s %8.0f samples/s %6.2f ms CPU a step\n", r+1, *rounds, v.name, deepmlp.Median(tput), 1e3*cpu)
		}
	}
	report(title, *steps, *rounds, hosts, runs, cpus, wire, outs)
}

// report prints each configuration's median, the two-worker rows against
// the one-process row above them.
func report(title string, steps, rounds int, hosts []string, runs, cpus [][]float64, wire, outs []float64) {
	fmt.Printf("%s, MNIST, %d steps a run, medians of %d rounds; workers %s\n\n", title, steps, rounds, strings.Join(hosts, ", "))
	fmt.Printf("| %-46s | %9s | %12s | %-30s | %14s | %12s | %s | %s |\n", "configuration", "samples/s", "/ one process", "rounds", "CPU ms a step", "/ one process", "stage bytes sent per step", "bytes written a step")
	fmt.Printf("| %s | %s:| %s:| %s | %s:| %s:| %s:| %s:|\n", strings.Repeat("-", 46), strings.Repeat("-", 9), strings.Repeat("-", 12), strings.Repeat("-", 30), strings.Repeat("-", 14), strings.Repeat("-", 12), strings.Repeat("-", 24), strings.Repeat("-", 19))
	for i, v := range variants {
		base, cbase := deepmlp.Median(runs[i]), deepmlp.Median(cpus[i])
		for k := i; k >= 0; k-- { // the one-process row above
			if !variants[k].remote {
				base, cbase = deepmlp.Median(runs[k]), deepmlp.Median(cpus[k])
				break
			}
		}
		rs := make([]string, len(runs[i]))
		for k, x := range runs[i] {
			rs[k] = fmt.Sprintf("%.0f", x)
		}
		cpu := deepmlp.Median(cpus[i])
		fmt.Printf("| %-46s | %9.0f | %11.2fx | %-30s | %14.2f | %11.2fx | %24.0f | %19.0f |\n", v.name, deepmlp.Median(runs[i]), deepmlp.Median(runs[i])/base,
			strings.Join(rs, " "), 1e3*cpu, cpu/cbase, wire[i], outs[i])
	}
}

// run runs the coordinator with args and reads its JSON events from
// stderr as they come: it returns the step throughputs after the first
// warmup step events, the bytes its stages sent to other processes, and the
// CPU seconds and the bytes written (sockets and logs) a step of the
// coordinator and the processes pids together, from the warmup-th step
// event to the last.
func run(train string, args []string, pids []int, warmup int) (tputs []float64, stageBytes, cpu, out float64) {
	cmd := exec.Command(train, args...)
	errs, err := cmd.StderrPipe()
	check(err)
	check(cmd.Start())
	var (
		tput         []float64
		bytes        float64
		events       int
		step0, step1 float64
		cpu0, cpu1   float64
		out0, out1   float64
		lines        []string
	)
	sc := bufio.NewScanner(errs)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			lines = append(lines, sc.Text())
			continue
		}
		switch ev["event"] {
		case "step":
			events++
			all := append([]int{cmd.Process.Pid}, pids...)
			at, out := cpuSeconds(all), written(all)
			if events == warmup {
				step0, cpu0, out0 = ev["step"].(float64), at, out
			}
			if events > warmup {
				tput = append(tput, ev["samples_per_sec"].(float64))
				step1, cpu1, out1 = ev["step"].(float64), at, out
			}
		case "stage":
			if b, ok := ev["wire_bytes"].(float64); ok {
				bytes += b
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		check(fmt.Errorf("%v: %v\n%s", args, err, strings.Join(lines, "\n")))
	}
	if len(tput) == 0 || step1 <= step0 {
		check(fmt.Errorf("%v: %d step events", args, events))
	}
	return tput, bytes, (cpu1 - cpu0) / (step1 - step0), (out1 - out0) / (step1 - step0)
}

// written returns the bytes the processes pids have written, sockets and
// files alike, from /proc/PID/io's wchar.
func written(pids []int) float64 {
	total := 0.0
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
		check(err)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "wchar: "); ok {
				n, err := strconv.ParseFloat(v, 64)
				check(err)
				total += n
			}
		}
	}
	return total
}

// cpuSeconds returns the user and system CPU time the processes pids have
// used, from /proc/PID/stat.
func cpuSeconds(pids []int) float64 {
	total := 0.0
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		check(err)
		// the fields after the command's name, which ends with the last ')'
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		utime, err1 := strconv.ParseFloat(f[11], 64)
		stime, err2 := strconv.ParseFloat(f[12], 64)
		check(errors.Join(err1, err2))
		total += (utime + stime) / clockTicks
	}
	return total
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// startWorkers starts two `train worker` processes on free loopback ports,
// with GOMAXPROCS=gomaxprocs unless 0, and returns their addresses, quoted
// for a TOML list, their process ids, and what stops them.
func startWorkers(train, dir string, gomaxprocs int) ([]string, []int, func()) {
	var hosts []string
	var pids []int
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
		if gomaxprocs > 0 { // each worker as if on a machine of its own with that many cores
			w.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", gomaxprocs))
		}
		out, err := w.StdoutPipe()
		check(err)
		check(w.Start())
		procs = append(procs, w)
		pids = append(pids, w.Process.Pid)
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
	return hosts, pids, stop
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
