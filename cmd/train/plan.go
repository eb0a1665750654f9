package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/pipeline"
)

const planUsage = "usage: train plan --config FILE [--set KEY=VALUE]... [--hosts N] [--bandwidth RATE] [--latency DURATION] [--simulate [--stages P] [--micro-batches M]]"

// runPlan prints the layouts a run of the config would consider and the
// step time the cost model predicts for each, without training: the
// layers are built and timed here, and --hosts N places the stages on N
// hosts like this machine (pipeline.hosts by default) joined by links of
// --bandwidth and --latency. With --simulate it prints instead each
// schedule's step as the simulator replays it with the layers' measured
// costs, for the config's stages and micro-batches or --stages and
// --micro-batches.
func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "the TOML config to plan")
	var sets setFlags
	fs.Var(&sets, "set", "override a config key: KEY=VALUE (repeatable)")
	hosts := fs.Int("hosts", -1, "hosts to place the stages on (default: the config's pipeline.hosts; 0: this process)")
	bandwidth := fs.String("bandwidth", "10Gbit", "the links' bandwidth: a number and bit, Kbit, Mbit, Gbit, B, KB, MB or GB (a second)")
	latency := fs.Duration("latency", 100*time.Microsecond, "the links' one-way latency")
	simulate := fs.Bool("simulate", false, "replay every schedule in the simulator, with the layers' measured costs")
	stages := fs.Int("stages", 0, "with --simulate: the stages (default: the plan's)")
	micro := fs.Int("micro-batches", 0, "with --simulate: the micro-batches (default: the config's; under auto, the most it tries)")
	if err := parseFlags(fs, args, planUsage); err != nil {
		return err
	}
	var simOnly []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "stages" || f.Name == "micro-batches" {
			simOnly = append(simOnly, "--"+f.Name)
		}
	})
	switch {
	case len(simOnly) > 0 && !*simulate:
		return badInputf("plan: %s: only with --simulate (%s)", strings.Join(simOnly, ", "), planUsage)
	case *stages < 0 || *micro < 0:
		return badInputf("plan: --stages %d, --micro-batches %d: must not be negative", *stages, *micro)
	}
	if *cfgPath == "" {
		return badInputf("plan: --config FILE is required (%s)", planUsage)
	}
	bw, err := parseRate(*bandwidth)
	if err != nil {
		return badInputf("plan: --bandwidth %q: %v", *bandwidth, err)
	}
	if *latency < 0 {
		return badInputf("plan: --latency %v: must not be negative", *latency)
	}
	c, err := config.Load(*cfgPath, sets)
	if err != nil {
		return badInput(err)
	}
	if *hosts >= 0 {
		c.Pipeline.Hosts = nil
		for h := range *hosts {
			c.Pipeline.Hosts = append(c.Pipeline.Hosts, fmt.Sprintf("host%d:7101", h+1))
		}
	}
	r := &trainRun{cfg: c, log: &runLog{Logger: zerolog.Nop()}} // a plan writes no log
	train, _, _, _, err := r.load(ctx)
	if err != nil {
		return err
	}
	classes := len(train.Classes)
	if isRegression(c, train) {
		classes = 0
	}
	if err := c.CheckData(train.Features, classes); err != nil {
		return badInput(err)
	}
	sample := train.SampleShape()
	if *simulate {
		return simulateSchedules(c, sample, *stages, *micro, stdout)
	}
	link := pipeline.Link{Bandwidth: bw, Latency: *latency}
	fmt.Fprintf(stdout, "plan: %s, batch %d, %d hosts, links of %s and %v one way; each layout's layers timed here on a micro-batch\n",
		*cfgPath, c.Data.BatchSize, len(c.Pipeline.Hosts), *bandwidth, *latency)
	rows, err := predictLayouts(ctx, c, sample, link)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "schedule\tstages\tmicro\treplicas\tsplit\tstep ms\tsamples/s\tbound by\tstages ms\tcuts ms\t")
	for _, r := range rows {
		fmt.Fprintln(w, r.line)
	}
	return w.Flush()
}

// planRow is a layout's line of train plan's table and its predicted step.
type planRow struct {
	line string
	step float64
}

// predictLayouts predicts the step of each layout a run of c would
// consider, fastest first.
func predictLayouts(ctx context.Context, c *config.Config, sample []int, link pipeline.Link) ([]planRow, error) {
	var rows []planRow
	for _, lay := range candidates(c, sample) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		sched, _ := actors.ParseSchedule(lay.Schedule) // validated
		cfg := pipeline.Config{Schedule: sched, MicroBatches: max(1, lay.Micro), Stages: lay.Stages, Chunks: lay.Chunks, Replicas: lay.Replicas,
			SplitBackward: lay.Split, Precision: precision(c), Hosts: c.Pipeline.Hosts, GEMMThreads: c.Pipeline.GEMMThreads,
			SampleRows: max(1, c.Data.BatchSize/max(1, lay.Micro)/max(1, lay.Replicas)), Loss: "cross_entropy"}
		p, err := pipeline.Predict(pipelineModel(c, sample), cfg, c.Data.BatchSize, link)
		if err != nil {
			return nil, badInputf("plan: %s: %v", lay, err)
		}
		rows = append(rows, planRow{fmt.Sprintf("%s\t%d\t%d\t%d\t%v\t%.2f\t%.0f\t%s\t%s\t%s\t", lay.Schedule, len(p.Plan.Positions), p.Plan.Micro,
			p.Plan.Replicas, lay.Split, 1e3*p.Step, float64(c.Data.BatchSize)/p.Step, p.Bottleneck, millis(p.Stage), millis(p.Cross)), p.Step})
	}
	slices.SortStableFunc(rows, func(a, b planRow) int { return cmp.Compare(a.step, b.step) })
	return rows, nil
}

// simulateSchedules prints every schedule's step as pipeline.Simulate
// replays it over p stages (0: the plan's) and m micro-batches (0: the
// config's, or the most auto tries), interleaved over pipeline.chunks
// chunks a stage (2 when it says 1 or nothing: one chunk a stage is
// 1F1B), from the layers' costs timed here on a micro-batch. Each
// schedule's chunks are runs of consecutive layers balanced as stages
// are; a schedule with more chunks than the model has layers is not
// simulated.
func simulateSchedules(c *config.Config, sample []int, p, m int, stdout io.Writer) error {
	v := c.Pipeline.Chunks
	if v <= 1 {
		v = 2
	}
	if m == 0 {
		m = int(c.Pipeline.MicroBatches)
		for _, lay := range candidates(c, sample) {
			m = max(m, lay.Micro)
		}
	}
	sched, _ := actors.ParseSchedule(c.Pipeline.Schedule) // validated
	if c.Pipeline.Schedule == "auto" {
		sched = actors.OneFOneB
	}
	chunks := 0
	if sched.Chunked() {
		chunks = c.Pipeline.Chunks
	}
	cfg := pipeline.Config{Schedule: sched, MicroBatches: m, Stages: c.Pipeline.Stages, Chunks: chunks, Replicas: 1, Precision: precision(c),
		Hosts: c.Pipeline.Hosts, GEMMThreads: c.Pipeline.GEMMThreads, SampleRows: max(1, c.Data.BatchSize/m), Loss: "cross_entropy"}
	sl, err := pipeline.MeasureSimLayers(pipelineModel(c, sample), cfg, c.Data.BatchSize)
	if err != nil {
		return badInputf("plan: %v", err)
	}
	if p == 0 {
		p = sl.Stages
	}
	fmt.Fprintf(stdout, "simulate: %d stages, %d micro-batches of %d rows; each layer timed here, its backward split half and half into B and W when it has weights; transfers between stages not counted\n",
		p, m, sl.Rows)
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "schedule\tchunks\tstep ms\tbubble\tspan bubble\tpeak held\t")
	for _, s := range []pipeline.SimSchedule{pipeline.SimSequential, pipeline.SimGPipe, pipeline.Sim1F1B,
		pipeline.SimInterleaved, pipeline.SimZBH1, pipeline.SimZBV} {
		chunks := 1
		switch s {
		case pipeline.SimInterleaved:
			chunks = v
		case pipeline.SimZBV:
			chunks = 2
		}
		if n := p * chunks; n > len(sl.F) {
			fmt.Fprintf(w, "%s\t%d\t-\t-\t-\tneeds %d layers, the model has %d\t\n", s, chunks, n, len(sl.F))
			continue
		}
		if s == pipeline.SimInterleaved && m%p != 0 {
			fmt.Fprintf(w, "%s\t%d\t-\t-\t-\tneeds micro-batches a multiple of the stages\t\n", s, chunks)
			continue
		}
		r, err := pipeline.Simulate(s, p, m, chunks, chunkCosts(sl, p*chunks))
		if err != nil {
			return err
		}
		// a stage's activations in micro-batches through a whole stage:
		// a chunk is 1/chunks of one
		held := make([]string, p)
		for i, n := range r.Peak {
			held[i] = strconv.FormatFloat(float64(n)/float64(chunks), 'g', 3, 64)
		}
		fmt.Fprintf(w, "%s\t%d\t%.3f\t%.3f\t%.3f\t%s\t\n", s, chunks, 1e3*r.Step, r.Bubble, r.SpanBubble, strings.Join(held, ","))
	}
	return w.Flush()
}

// chunkCosts groups the layers into n chunks, runs of consecutive layers
// balanced by their whole cost, and adds up each chunk's F, B and W.
func chunkCosts(sl *pipeline.SimLayers, n int) pipeline.SimCosts {
	whole := make([]float64, len(sl.F))
	for i := range whole {
		whole[i] = sl.F[i] + sl.B[i] + sl.W[i]
	}
	bounds := pipeline.Partition(whole, n)
	cost := pipeline.SimCosts{F: make([]float64, n), B: make([]float64, n), W: make([]float64, n)}
	for c := range n {
		for l := bounds[c]; l < bounds[c+1]; l++ {
			cost.F[c] += sl.F[l]
			cost.B[c] += sl.B[l]
			cost.W[c] += sl.W[l]
		}
		// a timer may read 0 for a layer that does next to nothing
		cost.F[c], cost.B[c] = max(cost.F[c], 1e-9), max(cost.B[c], 1e-9)
	}
	return cost
}

// millis formats seconds as milliseconds, comma separated.
func millis(s []float64) string {
	if len(s) == 0 {
		return "-"
	}
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.FormatFloat(1e3*v, 'f', 2, 64)
	}
	return strings.Join(out, ",")
}

// parseRate reads a rate such as "1Gbit", "100Mbit" or "500MB" as bytes a
// second; a bare number is bytes a second.
func parseRate(s string) (float64, error) {
	units := []struct {
		suffix string
		bytes  float64
	}{{"Gbit", 1e9 / 8}, {"Mbit", 1e6 / 8}, {"Kbit", 1e3 / 8}, {"bit", 1.0 / 8}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	scale, num := 1.0, s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			scale, num = u.bytes, strings.TrimSuffix(s, u.suffix)
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("want a positive number with a unit, e.g. 1Gbit or 100MB")
	}
	return v * scale, nil
}
