// Command plan checks `train plan`'s predicted step times against runs
// over two `train worker` processes whose links go through toxiproxy on
// 127.0.0.1, at a latency and a bandwidth each way: the deep MLP of
// bench/scaling (784-1024-1024-1024-10, batch 256, real MNIST) under 1f1b
// over 2 stages and with 2 replicas.
//
//	go build -o /tmp/train ./cmd/train
//	go run ./bench/plan -train /tmp/train -data /data/mnist -rounds 3
//
// Every process's listening port is behind a proxy of its own: the
// workers advertise theirs (--advertise) and the coordinator its own
// (pipeline.listen, pipeline.advertise), so every byte between any two of
// them crosses one proxy, delayed by the latency toxic and paced by the
// bandwidth toxic in each direction. A run's step time is its batch over
// the median samples_per_sec of its step events after the first -warmup;
// a configuration's the median over the rounds.
//
// A link through the proxy is not the link its toxics name: toxiproxy
// counts latency in whole milliseconds (0.2 ms is 0), and its pipeline of
// goroutines moves bytes at its own pace on a busy machine. So before each
// link's runs a probe measures what the proxies deliver, through one more
// proxy with the same toxics to an echo server: the latency one way (half
// the median round trip of 64 bytes) and the bandwidth (4 MiB over the
// median round trip less that), and `train plan` predicts at both the
// nominal and the probed link.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/bench/internal/deepmlp"
)

// link is one setting of the proxies.
type link struct {
	name      string
	latency   time.Duration
	bandwidth string // as train plan takes it
	kbps      int64  // toxiproxy's bandwidth toxic: KB a second
}

var links = []link{
	{"2 ms, 1 Gbit/s", 2 * time.Millisecond, "1Gbit", 125_000},
	{"0.2 ms (a 0 ms toxic), 10 Gbit/s", 200 * time.Microsecond, "10Gbit", 1_250_000},
}

// layout is a pipeline layout, as --set flags.
type layout struct {
	name string
	sets []string
}

var layouts = []layout{
	{"1f1b, 2 stages, 4 micro-batches", []string{"pipeline.schedule=1f1b", "pipeline.stages=2", "pipeline.micro_batches=4"}},
	{"2 replicas, 1 stage each", []string{"pipeline.schedule=sequential", "pipeline.stages=1", "pipeline.micro_batches=1", "pipeline.replicas=2"}},
}

func main() {
	train := flag.String("train", "/tmp/train", "the train binary (go build -o /tmp/train ./cmd/train)")
	data := flag.String("data", "", "folder with the four MNIST IDX .gz files (required)")
	rounds := flag.Int("rounds", 3, "rounds; each runs every configuration once")
	steps := flag.Int("steps", 40, "optimizer steps per run")
	warmup := flag.Int("warmup", 5, "step events left out at the start of each run")
	gemm := flag.Int("gemm-threads", 1, "pipeline.gemm_threads of every run and plan: the workers share this machine's cores, so 1 gives each worker one core, as the plan then times its stages; 0: the workers' default")
	flag.Parse()
	if *data == "" {
		check(errors.New("-data DIR is required: the folder of the MNIST IDX files"))
	}
	abs, err := filepath.Abs(*data)
	check(err)
	dir, err := os.MkdirTemp("", "plan")
	check(err)
	atExit = append(atExit, func() { os.RemoveAll(dir) })
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "deep.toml")
	check(os.WriteFile(cfg, []byte(deepmlp.Model), 0o644))

	zerolog.SetGlobalLevel(zerolog.WarnLevel) // the toxics trace every interrupted pipe
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	coordReal, coordProxy := freeAddr(), freeAddr()
	proxies := []*toxiproxy.Proxy{proxy(server, "coordinator", coordProxy, coordReal)}
	echoAddr, probeAddr := echo(), freeAddr()
	proxies = append(proxies, proxy(server, "probe", probeAddr, echoAddr))
	var hosts []string
	for i := range 2 {
		real, front := freeAddr(), freeAddr()
		startWorker(*train, real, front, filepath.Join(dir, fmt.Sprint("worker", i)))
		proxies = append(proxies, proxy(server, fmt.Sprint("worker", i), front, real))
		hosts = append(hosts, strconv.Quote(front))
	}
	defer stopAll()

	base := []string{"--config", cfg, "--set", "data.path=" + abs, "--set", fmt.Sprintf("pipeline.gemm_threads=%d", *gemm)}
	fmt.Printf("784-1024-1024-1024-10, batch 256, MNIST, gemm_threads %d, %d steps a run, medians of %d rounds; every link through toxiproxy\n\n", *gemm, *steps, *rounds)
	fmt.Println("| link | probed | layout | predicted ms | at the probed link | measured ms | measured / predicted | / at the probed link | rounds (ms) |")
	fmt.Println("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, l := range links {
		for _, p := range proxies {
			toxics(p, l)
		}
		lat, bw := probe(probeAddr)
		probed := fmt.Sprintf("%.3f ms, %.0f MB/s", lat.Seconds()*1e3, bw/1e6)
		for _, lay := range layouts {
			sets := setFlags(lay.sets)
			plan := run(*train, append(append([]string{"plan", "--hosts", "2", "--bandwidth", l.bandwidth, "--latency", l.latency.String()}, base...), sets...)...)
			predicted := planStep(plan)
			plan = run(*train, append(append([]string{"plan", "--hosts", "2", "--bandwidth", fmt.Sprintf("%.0fB", bw), "--latency", lat.String()}, base...), sets...)...)
			atProbed := planStep(plan)
			var ms []float64
			for r := range *rounds {
				logDir := filepath.Join(dir, fmt.Sprintf("logs-%s-%s-%d", l.bandwidth, strings.Fields(lay.name)[0], r))
				args := append(append(append([]string{}, base...), sets...), "--log-format", "json",
					"--set", fmt.Sprintf("train.max_steps=%d", *steps), "--set", "log.every=1", "--set", "log.dir="+logDir,
					"--set", "train.checkpoint_dir="+filepath.Join(dir, "ck"), "--set", "train.eval_every=1000000",
					"--set", "pipeline.hosts=["+strings.Join(hosts, ", ")+"]",
					"--set", "pipeline.listen="+coordReal, "--set", "pipeline.advertise="+coordProxy)
				run(*train, args...)
				ms = append(ms, 1e3*256/deepmlp.Median(readRates(logDir, *warmup)))
				os.RemoveAll(filepath.Join(dir, "ck"))
			}
			m := deepmlp.Median(ms)
			rs := make([]string, len(ms))
			for i, x := range ms {
				rs[i] = fmt.Sprintf("%.1f", x)
			}
			fmt.Printf("| %s | %s | %s | %.1f | %.1f | %.1f | %.2f | %.2f | %s |\n", l.name, probed, lay.name, predicted, atProbed, m, m/predicted, m/atProbed, strings.Join(rs, " "))
		}
	}
}

// proxy starts a proxy from listen to upstream.
func proxy(server *toxiproxy.ApiServer, name, listen, upstream string) *toxiproxy.Proxy {
	p := toxiproxy.NewProxy(server, name, listen, upstream)
	check(p.Start())
	atExit = append(atExit, p.Stop)
	return p
}

// toxics sets p's latency and bandwidth in both directions to l's.
func toxics(p *toxiproxy.Proxy, l link) {
	for _, dir := range []string{"upstream", "downstream"} {
		for _, t := range []string{
			fmt.Sprintf(`{"name":"latency_%s","type":"latency","stream":"%s","attributes":{"latency":%d}}`, dir, dir, l.latency.Microseconds()/1000),
			fmt.Sprintf(`{"name":"bandwidth_%s","type":"bandwidth","stream":"%s","attributes":{"rate":%d}}`, dir, dir, l.kbps),
		} {
			name := t[len(`{"name":"`):strings.Index(t, `","type"`)]
			if p.Toxics.GetToxic(name) != nil {
				_, err := p.Toxics.UpdateToxicJson(name, strings.NewReader(t))
				check(err)
			} else {
				_, err := p.Toxics.AddToxicJson(strings.NewReader(t))
				check(err)
			}
		}
	}
}

// echo starts a server that reads a frame (a u32 length and its bytes)
// and answers one byte, for probe.
func echo() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	atExit = append(atExit, func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var n [4]byte
				for {
					if _, err := io.ReadFull(c, n[:]); err != nil {
						return
					}
					if _, err := io.CopyN(io.Discard, c, int64(binary.LittleEndian.Uint32(n[:]))); err != nil {
						return
					}
					if _, err := c.Write([]byte{1}); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// probe measures the link to addr: the latency one way, half the median
// round trip of a 64-byte frame, and the bandwidth, 4 MiB over the median
// round trip of a frame that long less the small one's.
func probe(addr string) (time.Duration, float64) {
	c, err := net.Dial("tcp", addr)
	check(err)
	defer c.Close()
	rtt := func(n, reps int) time.Duration {
		msg := binary.LittleEndian.AppendUint32(nil, uint32(n))
		msg = append(msg, make([]byte, n)...)
		var ds []float64
		for range reps {
			t0 := time.Now()
			_, err := c.Write(msg)
			check(err)
			var b [1]byte
			_, err = io.ReadFull(c, b[:])
			check(err)
			ds = append(ds, float64(time.Since(t0)))
		}
		return time.Duration(deepmlp.Median(ds))
	}
	rtt(64, 3) // the connection's first bytes: the proxy dials upstream
	small := rtt(64, 15)
	const big = 4 << 20
	large := rtt(big, 7)
	return small / 2, big / max(large-small, time.Microsecond).Seconds()
}

// setFlags turns KEY=VALUE settings into --set flags.
func setFlags(sets []string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, "--set", s)
	}
	return out
}

// planStep returns the predicted step of train plan's first row, in ms.
func planStep(out string) float64 {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 {
		check(fmt.Errorf("train plan printed %q", out))
	}
	f := strings.Fields(lines[2])
	v, err := strconv.ParseFloat(f[5], 64)
	check(err)
	return v
}

// run runs the train binary and returns its stdout.
func run(train string, args ...string) string {
	cmd := exec.Command(train, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		check(fmt.Errorf("train %s: %v\n%s", strings.Join(args, " "), err, lastLines(stderr.String(), 5)))
	}
	return string(out)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// startWorker starts `train worker` listening at listen and advertising
// advertise.
func startWorker(train, listen, advertise, logDir string) {
	w := exec.Command(train, "worker", "--listen", listen, "--advertise", advertise, "--log-dir", logDir)
	out, err := w.StdoutPipe()
	check(err)
	check(w.Start())
	atExit = append(atExit, func() { _ = w.Process.Kill(); _ = w.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case <-line:
	case <-time.After(20 * time.Second):
		check(fmt.Errorf("the worker at %s did not start within 20 s", listen))
	}
}

// freeAddr returns a free loopback address.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().String()
}

// readRates returns a run's step throughputs after the first warmup.
func readRates(dir string, warmup int) []float64 {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		check(fmt.Errorf("%s: %d logs", dir, len(files)))
	}
	rates, err := deepmlp.StepRates(files[0])
	check(err)
	if len(rates) <= warmup {
		check(fmt.Errorf("%s: %d step events", dir, len(rates)))
	}
	return rates[warmup:]
}

// atExit is what stopAll and check run: os.Exit skips deferred calls, and
// no worker may outlive the command.
var atExit []func()

func stopAll() {
	for i := len(atExit) - 1; i >= 0; i-- { // as defers run
		atExit[i]()
	}
	atExit = nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "plan:", err)
		stopAll()
		os.Exit(1)
	}
}
