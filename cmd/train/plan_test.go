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
