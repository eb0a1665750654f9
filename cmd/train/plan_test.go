package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlan: train plan prints every layout a config allows with its
// predicted step, fastest first, writes nothing, and refuses bad flags with
// exit 2 naming them.
func TestPlan(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.toml")
	cfg := strings.Replace(baseConfig, "[log]", "[log]\ndir = \""+filepath.Join(dir, "logs")+"\"", 1)
	cfg = strings.Replace(cfg, "schedule = \"sequential\"\nmicro_batches = 2", "schedule = \"1f1b\"\nmicro_batches = \"auto\"\nstages = 2", 1)
	cfg = strings.Replace(cfg, "batch_size = 64", "batch_size = 256", 1) // micro-batches 2, 4 and 8
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runSub("plan", "--config", path, "--hosts", "2", "--bandwidth", "1Gbit", "--latency", "2ms")
	if r.code != 0 {
		t.Fatalf("plan: exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "2 hosts") || !strings.Contains(lines[1], "step ms") {
		t.Fatalf("plan printed:\n%s", r.stdout)
	}
	var steps []float64
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) < 9 || f[0] != "1f1b" || f[1] != "2" {
			t.Fatalf("plan row %q: want 1f1b over 2 stages", l)
		}
		var ms float64
		if _, err := fmt.Sscan(f[5], &ms); err != nil || !(ms > 4) { // at least the 2 ms links each way
			t.Errorf("plan row %q: step %q ms, want more than the links' 4 ms", l, f[5])
		}
		steps = append(steps, ms)
	}
	for i := 1; i < len(steps); i++ {
		if steps[i] < steps[i-1] {
			t.Errorf("plan rows not fastest first: %v", steps)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "logs")); !os.IsNotExist(err) {
		t.Errorf("plan wrote %s", filepath.Join(dir, "logs"))
	}
	for _, c := range []struct{ args, want []string }{
		{[]string{"--bandwidth", "fast"}, []string{"--bandwidth", "fast"}},
		{[]string{"--latency", "-1ms"}, []string{"--latency"}},
		{nil, []string{"--config FILE is required"}},
	} {
		args := append([]string{"plan"}, c.args...)
		if c.args != nil {
			args = append(args, "--config", path)
		}
		r := runSub(args...)
		if r.code != exitBadInput {
			t.Errorf("plan %v: exit %d, want %d", c.args, r.code, exitBadInput)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("plan %v: %q does not name %q", c.args, lastLine(r.stderr), w)
			}
		}
	}
}

// TestPlanSimulate: train plan --simulate prints every schedule's
// simulated step for the config's layout or the stages and micro-batches
// given, each stage's peak within its schedule's bound, says why a
// schedule cannot be simulated, and refuses its flags without --simulate
// or out of range, with exit 2 naming them.
func TestPlanSimulate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "deep.toml")
	cfg := "seed = 1\n[data]\nname = \"digits\"\nbatch_size = 256\n" +
		strings.Repeat("[[model.layers]]\ntype = \"linear\"\nunits = 16\n[[model.layers]]\ntype = \"relu\"\n", 16) +
		"[[model.layers]]\ntype = \"linear\"\nunits = 10\n[optimizer]\ntype = \"sgd\"\nlr = 0.05\n" +
		"[pipeline]\nschedule = \"1f1b\"\nmicro_batches = 8\nstages = 4\n" // 33 layers
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args    []string
		p, m, v int               // v: interleaved's chunks
		not     map[string]string // why a schedule is not simulated
	}{
		{nil, 4, 8, 2, nil},
		{[]string{"--stages", "16", "--micro-batches", "32"}, 16, 32, 2, nil},
		{[]string{"--stages", "4", "--micro-batches", "6"}, 4, 6, 2, map[string]string{"interleaved": "needs micro-batches a multiple of the stages"}},
		{[]string{"--set", "pipeline.schedule=interleaved", "--set", "pipeline.chunks=3"}, 4, 8, 3, nil},
		{[]string{"--stages", "12", "--set", "pipeline.schedule=interleaved", "--set", "pipeline.chunks=3"}, 12, 8, 3, map[string]string{"interleaved": "needs 36 layers, the model has 33"}},
	} {
		r := runSub(append([]string{"plan", "--config", path, "--simulate"}, c.args...)...)
		if r.code != 0 {
			t.Fatalf("plan --simulate %v: exit %d\n%s", c.args, r.code, r.stderr)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 8 || !strings.HasPrefix(lines[0], fmt.Sprintf("simulate: %d stages, %d micro-batches", c.p, c.m)) || !strings.Contains(lines[1], "bubble") {
			t.Fatalf("plan --simulate %v printed:\n%s", c.args, r.stdout)
		}
		for i, s := range []string{"sequential", "gpipe", "1f1b", "interleaved", "zb-h1", "zbv"} {
			line := lines[2+i]
			f := strings.Fields(line)
			if f[0] != s {
				t.Errorf("plan --simulate %v: row %d is %q, want %s", c.args, i, line, s)
				continue
			}
			if s == "interleaved" && f[1] != fmt.Sprint(c.v) {
				t.Errorf("plan --simulate %v: interleaved over %s chunks a stage, want %d", c.args, f[1], c.v)
			}
			if why, ok := c.not[s]; ok {
				if !strings.HasSuffix(line, why) {
					t.Errorf("plan --simulate %v: %s row %q, want it to say %q", c.args, s, line, why)
				}
				continue
			}
			if s == "sequential" && f[3] != fmt.Sprintf("%.3f", 1-1/float64(c.p)) {
				t.Errorf("plan --simulate %v: sequential's bubble %s, want 1 − 1/%d", c.args, f[3], c.p)
			}
			peaks := strings.Split(f[len(f)-1], ",")
			if len(peaks) != c.p {
				t.Errorf("plan --simulate %v: %s row %q: %d stages' peaks, want %d", c.args, s, line, len(peaks), c.p)
				continue
			}
			for st, txt := range peaks {
				var got float64
				fmt.Sscan(txt, &got)
				exact, bound := map[string]int{"sequential": 1, "gpipe": c.m, "1f1b": min(c.p-st, c.m)}[s], c.p
				if s == "interleaved" {
					bound = 2 * c.p // Megatron's first stage: ((v+1)p − 1)/v chunks' worth
				}
				if (exact > 0 && got != float64(exact)) || got > float64(bound) && s != "gpipe" {
					t.Errorf("plan --simulate %v: %s holds %v micro-batches on stage %d (exact %d, bound %d)", c.args, s, got, st, exact, bound)
				}
			}
		}
	}
	for _, c := range []struct{ args, want []string }{
		{[]string{"--stages", "4"}, []string{"--stages: only with --simulate"}},
		{[]string{"--stages", "2", "--micro-batches", "4"}, []string{"--micro-batches, --stages: only with --simulate"}},
		{[]string{"--simulate", "--stages", "-1"}, []string{"--stages -1"}},
	} {
		r := runSub(append([]string{"plan", "--config", path}, c.args...)...)
		if r.code != exitBadInput {
			t.Errorf("plan %v: exit %d, want %d", c.args, r.code, exitBadInput)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("plan %v: %q does not name %q", c.args, lastLine(r.stderr), w)
			}
		}
	}
}
