package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetrics: with log.metrics, a run serves Prometheus metrics that the
// client library's parser reads, with the step count, loss, learning rate,
// throughput, test scores and each actor's counters, changing between two
// scrapes.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(baseConfig, "epochs = 2", "epochs = 1000", 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan runResult, 1)
	go func() {
		path := filepath.Join(dir, "run.toml")
		os.WriteFile(path, []byte(cfg), 0o644)
		var stderr bytes.Buffer
		code := run(ctx, []string{"--config", path, "--set", "log.dir=" + filepath.Join(dir, "logs"),
			"--set", "train.checkpoint_dir=" + filepath.Join(dir, "ck"), "--set", "log.metrics=127.0.0.1:0",
			"--set", "log.every=5"}, &stderr)
		done <- runResult{code: code, stderr: stderr.String()}
	}()
	defer func() {
		cancel()
		select {
		case r := <-done:
			if r.code != exitInterrupted {
				t.Errorf("the run ended with %d, want %d (interrupted)\n%s", r.code, exitInterrupted, r.stderr)
			}
		case <-time.After(30 * time.Second):
			t.Error("the run did not stop within 30 s of its cancel")
		}
	}()
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(dir, "logs", "*.jsonl"))
		if len(files) == 1 {
			for _, ev := range eventsNamed(readEvents(t, filepath.Join(dir, "logs")), "metrics") {
				addr = ev["address"].(string)
			}
		}
	}
	if addr == "" {
		t.Fatal("no metrics event within 20 s")
	}
	scrape := func() map[string]*dto.MetricFamily { return scrapeMetrics(t, addr) }
	value := func(fams map[string]*dto.MetricFamily, name, actor string) (float64, bool) {
		f := fams[name]
		if f == nil {
			return 0, false
		}
		for _, m := range f.Metric {
			if actor != "" && (len(m.Label) == 0 || m.Label[0].GetValue() != actor) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			}
		}
		return 0, false
	}
	// wait for the first evaluation, at the end of the first epoch
	var first map[string]*dto.MetricFamily
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		first = scrape()
		if acc, ok := value(first, "pipetrain_test_accuracy", ""); ok && acc == acc { // not NaN
			break
		}
	}
	time.Sleep(300 * time.Millisecond)
	second := scrape()
	for _, c := range []struct {
		name, actor string
		changes     bool
	}{
		{"pipetrain_steps_total", "", true},
		{"pipetrain_loss", "", true},
		{"pipetrain_learning_rate", "", false},
		{"pipetrain_samples_per_second", "", true},
		{"pipetrain_test_loss", "", false},
		{"pipetrain_test_accuracy", "", false},
		{"pipetrain_actor_mailbox_length", "loss", false},
		{"pipetrain_actor_messages_total", "stage 0", true},
		{"pipetrain_actor_busy_seconds_total", "stage 0", true},
		{"pipetrain_actor_busy_fraction", "coordinator", false},
	} {
		a, ok1 := value(first, c.name, c.actor)
		b, ok2 := value(second, c.name, c.actor)
		if !ok1 || !ok2 {
			t.Errorf("%s{%s}: missing (%v, %v)", c.name, c.actor, ok1, ok2)
			continue
		}
		if c.changes && a == b {
			t.Errorf("%s{%s}: %v in both scrapes, 300 ms apart", c.name, c.actor, a)
		}
		t.Log(fmt.Sprintf("%s{%s}: %v, then %v", c.name, c.actor, a, b))
	}
	for _, m := range second["pipetrain_actor_mailbox_length"].GetMetric() {
		if m.Gauge.GetValue() < 0 {
			t.Errorf("actor %s: mailbox length %v", m.Label[0].GetValue(), m.Gauge.GetValue())
		}
	}
	if steps, _ := value(second, "pipetrain_steps_total", ""); steps < 1 {
		t.Errorf("steps_total %v", steps)
	}
}

// scrapeMetrics reads addr's /metrics with the Prometheus client library's
// parser.
func scrapeMetrics(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the client library cannot parse %s/metrics: %v", addr, err)
	}
	return fams
}

// TestWorkerMetrics: `train worker --metrics` serves the counters of the
// stages it hosts while a run lasts, and drops them with the run.
func TestWorkerMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildTrain(t, t.TempDir())
	w := startWorker(t, bin, "127.0.0.1:0", "--metrics", "127.0.0.1:0")
	var addr string
	for _, ev := range eventsNamed(readEvents(t, w.logDir), "metrics") {
		addr = ev["address"].(string)
	}
	if addr == "" {
		t.Fatal("the worker logged no metrics event")
	}
	stages := func() map[string]float64 {
		out := map[string]float64{}
		for _, m := range scrapeMetrics(t, addr)["pipetrain_actor_messages_total"].GetMetric() {
			out[m.Label[0].GetValue()] = m.Counter.GetValue()
		}
		return out
	}
	if s := stages(); len(s) != 0 {
		t.Fatalf("an idle worker shows stages %v", s)
	}
	done := make(chan runResult, 1)
	go func() {
		cfg := strings.Replace(baseConfig, "epochs = 2", "epochs = 40", 1)
		done <- coordinate(t, bin, t.TempDir(), cfg, "--set", "pipeline.schedule=1f1b", "--set", "pipeline.stages=2", "--set", hostsSet(w))
	}()
	var seen map[string]float64
	for deadline := time.Now().Add(30 * time.Second); len(seen) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if s := stages(); len(s) == 2 && s["stage 0"] > 0 {
			seen = s
		}
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("the run: exit %d\n%s", r.code, lastLine(r.stderr))
	}
	if len(seen) == 0 {
		t.Fatal("the worker's metrics never showed its two stages")
	}
	t.Logf("during the run: %v", seen)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s := stages()
		if len(s) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the run the worker still shows %v", s)
		}
	}
}
