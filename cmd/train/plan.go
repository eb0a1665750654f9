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

const planUsage = "usage: train plan --config FILE [--set KEY=VALUE]... [--hosts N] [--bandwidth RATE] [--latency DURATION]"

// runPlan prints the layouts a run of the config would consider and the
// step time the cost model predicts for each, without training: the
// layers are built and timed here, and --hosts N places the stages on N
// hosts like this machine (pipeline.hosts by default) joined by links of
// --bandwidth and --latency.
func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "the TOML config to plan")
	var sets setFlags
	fs.Var(&sets, "set", "override a config key: KEY=VALUE (repeatable)")
	hosts := fs.Int("hosts", -1, "hosts to place the stages on (default: the config's pipeline.hosts; 0: this process)")
	bandwidth := fs.String("bandwidth", "10Gbit", "the links' bandwidth: a number and bit, Kbit, Mbit, Gbit, B, KB, MB or GB (a second)")
	latency := fs.Duration("latency", 100*time.Microsecond, "the links' one-way latency")
	if err := parseFlags(fs, args, planUsage); err != nil {
		return err
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
