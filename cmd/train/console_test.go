package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// vt is the little of a terminal the console tests need: printable text
// at the cursor, carriage return, newline, erase to the end of the line,
// colours ignored, and wrapping at the width.
type vt struct {
	width    int
	rows     [][]rune
	row, col int
	wrapped  map[int]bool // rows that went on into the next at the width
}

func (t *vt) put(r rune) {
	for len(t.rows) <= t.row {
		t.rows = append(t.rows, nil)
	}
	line := t.rows[t.row]
	for len(line) <= t.col {
		line = append(line, ' ')
	}
	line[t.col] = r
	t.rows[t.row] = line
	t.col++
	if t.col == t.width {
		if t.wrapped == nil {
			t.wrapped = map[int]bool{}
		}
		t.wrapped[t.row] = true
		t.row, t.col = t.row+1, 0
	}
}

func (t *vt) feed(b []byte) {
	s := []rune(string(b))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\r':
			t.col = 0
		case c == '\n':
			t.row++
			t.col = 0
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			if j < len(s) && s[j] == 'K' && t.row < len(t.rows) && t.col < len(t.rows[t.row]) {
				t.rows[t.row] = t.rows[t.row][:t.col]
			}
			i = j
		case c >= ' ':
			t.put(c)
		}
	}
}

// text is the screen's lines with the rows that wrapped joined again, so
// that a word split at the width is found whole.
func (t *vt) text() string {
	var b strings.Builder
	for i, r := range t.rows {
		b.WriteString(strings.TrimRight(string(r), " "))
		if !t.wrapped[i] {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (t *vt) lines() []string {
	out := make([]string, len(t.rows))
	for i, r := range t.rows {
		out[i] = strings.TrimRight(string(r), " ")
	}
	return out
}

var (
	barLine = regexp.MustCompile(`epoch \d+/\d+ \[[= ]*\] \d+/\d+`)
	logLine = regexp.MustCompile(`\d\d:\d\d:\d\d (INF|WRN|ERR) `)
	// 4 significant digits: 1.234, 0.1234, 0.001234, 1.234e-05
	sig4    = `(\d\.\d{0,3}|0\.0*[1-9]\d{0,3})(e-\d+)?`
	summary = regexp.MustCompile(`epoch 1/2: loss ` + sig4 + `, test loss ` + sig4 + `, test accuracy \d+\.\d\d%, \d{1,3}(,\d{3})* samples/s, [0-9.]+ s`)
	// the bar's step count, and its time so far and time left
	barSteps  = regexp.MustCompile(`\] (\d+)/(\d+) loss`)
	barETA    = regexp.MustCompile(`\d+/\d+ loss \S+( [\d,]+ samples/s)? [0-9.]+s, [0-9.]+s left`)
	runEnd    = regexp.MustCompile(`run ended at step 60 after [0-9.]+s \(\d{1,3}(,\d{3})* samples/s\); train loss ` + sig4 + `, test loss ` + sig4 + `, accuracy \d+\.\d\d%; checkpoint \S+step-00000060; plot \S+\.png`)
	longFloat = regexp.MustCompile(`\d\.\d{7,}`)
)

// runInTerminal runs the train binary under a pseudo terminal of 160
// columns and returns the screen a person would read at its end.
func runInTerminal(t *testing.T, bin string, args ...string) (*vt, []byte) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 160, Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("train in a terminal: %v", err)
		}
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-waited
		t.Fatal("train in a terminal did not end within 3 minutes")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	f.Close()
	mu.Lock()
	defer mu.Unlock()
	screen := &vt{width: 160}
	raw := bytes.ReplaceAll(out.Bytes(), []byte("\r\n"), []byte("\n"))
	screen.feed(raw)
	return screen, raw
}

// TestConsole: in a terminal, log lines go above the progress bar and
// never share a line with it, the numbers are rounded for reading, the run
// id appears once, and after an epoch its summary is on screen.
func TestConsole(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildTrain(t, dir)
	screen, raw := runInTerminal(t, bin, "--config", filepath.Join("..", "..", "configs", "mlp.toml"), // the embedded digits
		"--set", "train.epochs=2", "--set", "train.max_steps=60", "--set", "log.every=10", // max_steps ends the run
		"--set", "log.dir="+filepath.Join(dir, "logs"), "--set", "train.checkpoint_dir="+filepath.Join(dir, "ck"))
	lines, text := screen.lines(), screen.text() // text: a line wrapped at the width is one again
	sawSummary := false
	for i, l := range lines {
		if barLine.MatchString(l) && logLine.MatchString(l) {
			t.Errorf("screen line %d holds both the bar and a log line: %q", i+1, l)
		}
		if m := longFloat.FindString(l); m != "" && !strings.Contains(l, "run started") {
			t.Errorf("screen line %d has an unrounded number %s: %q", i+1, m, l)
		}
		sawSummary = sawSummary || summary.MatchString(l)
	}
	if !sawSummary {
		t.Errorf("no epoch summary with rounded numbers on the screen:\n%s", text)
	}
	if n := strings.Count(text, "run="); n != 1 {
		t.Errorf("the run id shows %d times, want once (at the start):\n%s", n, text)
	}
	if strings.Count(text, "run_id") != 0 {
		t.Errorf("run_id is on the screen:\n%s", text)
	}
	if !strings.Contains(text, "samples_per_sec=") {
		t.Errorf("no step line on the screen:\n%s", text)
	}
	// the bar counts the run's steps, to max_steps, with its times
	bars := barSteps.FindAllSubmatch(raw, -1)
	if len(bars) == 0 {
		t.Fatalf("no bar drawn:\n%q", raw)
	}
	for _, m := range bars {
		if string(m[2]) != "60" {
			t.Errorf("a bar counts to %s steps, want 60 (train.max_steps ends the run): %s", m[2], m[0])
		}
	}
	if last := bars[len(bars)-1]; string(last[1]) != "60" {
		t.Errorf("the last bar drawn stands at %s/60", last[1])
	}
	if !barETA.Match(raw) {
		t.Errorf("no bar with its time and the time left:\n%q", raw)
	}
	if bytes.Contains(raw, []byte("e+0")) {
		t.Errorf("a number in exponent form on the screen:\n%s", text)
	}
	var start string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "run started:") {
			start = l
		}
	}
	if start == "" || len(start) > 200 {
		t.Errorf("run started: %d characters, want one line of at most two rows of 100:\n%s", len(start), start)
	}
	if !runEnd.MatchString(text) {
		t.Errorf("no end-of-run summary naming the checkpoint and the plot:\n%s", text)
	}
	if strings.Contains(text, "busy_fraction") {
		t.Errorf("stage lines on the console without --verbose:\n%s", text)
	}
}

// TestReadable: the console rounds numbers for reading.
func TestReadable(t *testing.T) {
	for _, c := range []struct {
		key, num, want string
	}{
		{"loss", "0.08123723417520523", "0.08124"},
		{"loss", "2.302585092994046", "2.303"},
		{"samples_per_sec", "72916.06194044008", "72,916"},
		{"tokens_per_sec", "15420.5", "15,420"},
		{"tokens_per_sec", "999.6", "1,000"},
		{"accuracy", "0.9916434540389972", "99.16%"},
		{"busy_fraction", "0.123456", "0.12"},
		{"wall_seconds", "1.23456", "1.23"},
		{"lr", "0.05", "0.05"},
		{"step", "700", ""}, // integers stay as they are
	} {
		got, ok := readable(c.key, json.Number(c.num))
		if c.want == "" && ok || c.want != "" && got != c.want {
			t.Errorf("readable(%s, %s) = %q, %v; want %q", c.key, c.num, got, ok, c.want)
		}
	}
}

// TestRoundNested: numbers inside a list of objects (a tune event's
// candidates) are rounded as fields are, and stay numbers.
func TestRoundNested(t *testing.T) {
	var ev map[string]any
	dec := json.NewDecoder(strings.NewReader(`{"candidates":[{"samples_per_sec":308415.8988395852,"stages":1,"loss":[2.302585092994046]}]}`))
	dec.UseNumber()
	if err := dec.Decode(&ev); err != nil {
		t.Fatal(err)
	}
	roundNested(ev["candidates"])
	got, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"candidates":[{"loss":[2.303],"samples_per_sec":"308,416","stages":1}]}`; string(got) != want {
		t.Errorf("rounded: %s, want %s", got, want)
	}
}
