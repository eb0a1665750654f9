package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/term"
)

// screen is stderr as a person reads it: log lines one after another, and
// on a terminal a progress bar on the line below the last of them. A log
// line first clears the bar, then the bar is drawn again under it, so no
// line ever holds both.
type screen struct {
	mu  sync.Mutex
	out io.Writer
	tty bool   // draw and clear the bar with carriage returns and ANSI erase
	bar string // the bar's text as drawn, "" when none
}

const eraseLine = "\r\x1b[K"

// Write writes one log line (zerolog's ConsoleWriter writes each event in
// one call) above the bar.
func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bar != "" {
		io.WriteString(s.out, eraseLine)
	}
	n, err := s.out.Write(p)
	if s.bar != "" {
		io.WriteString(s.out, s.bar)
	}
	return n, err
}

// setBar draws the bar's text in place of the previous one; "" clears it.
func (s *screen) setBar(text string) {
	if !s.tty {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bar == "" && text == "" {
		return
	}
	io.WriteString(s.out, eraseLine+text)
	s.bar = text
}

// width returns the terminal's width in columns, 80 when unknown.
func (s *screen) width() int {
	if f, ok := s.out.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 80
}

// consoleWriter formats events for a person: rounded numbers, the run id
// and config once at the start only, an epoch's summary as its message.
func consoleWriter(out io.Writer) zerolog.ConsoleWriter {
	return zerolog.ConsoleWriter{Out: out, TimeFormat: "15:04:05", FieldsExclude: []string{"run_id"},
		FormatPrepare: func(ev map[string]any) error {
			switch ev["event"] {
			case "run_start", "run_end": // the message says them; the JSON log has every field
				id, name := ev["run_id"], ev["event"]
				for k := range ev {
					switch k {
					case "error", zerolog.LevelFieldName, zerolog.TimestampFieldName, zerolog.MessageFieldName:
					default:
						delete(ev, k)
					}
				}
				if name == "run_start" {
					ev["run"] = id // once, here
				}
			case "epoch":
				for k := range ev {
					if k != "event" && k != zerolog.LevelFieldName && k != zerolog.TimestampFieldName && k != zerolog.MessageFieldName {
						delete(ev, k) // the message says them
					}
				}
			}
			for k, v := range ev {
				if s, ok := readable(k, v); ok {
					ev[k] = s
				} else {
					roundNested(v)
				}
			}
			return nil
		}}
}

// readable rounds the number of field k for reading: losses to 4
// significant digits, samples/s to an integer, accuracy as a percentage,
// fractions and seconds to 2 decimals. JSONL keeps every digit.
func readable(k string, v any) (string, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return "", false
	}
	f, err := n.Float64()
	if err != nil || strings.IndexAny(string(n), ".eE") < 0 {
		return "", false // an integer: as it is
	}
	switch {
	case k == "accuracy":
		return strconv.FormatFloat(100*f, 'f', 2, 64) + "%", true
	case k == "samples_per_sec" || k == "tokens_per_sec":
		return thousands(f), true
	case strings.HasSuffix(k, "fraction") || strings.HasSuffix(k, "seconds"):
		return strconv.FormatFloat(f, 'f', 2, 64), true
	}
	return strconv.FormatFloat(f, 'g', 4, 64), true
}

// roundNested rounds, in place, the numbers inside a field that is an
// object or a list (a tune event's candidates) as readable rounds fields.
func roundNested(v any) {
	set := func(k string, x any, put func(any)) {
		s, ok := readable(k, x)
		if !ok {
			roundNested(x)
			return
		}
		if json.Valid([]byte(s)) {
			put(json.Number(s)) // printed as the number it is
		} else {
			put(s)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			set(k, x, func(y any) { v[k] = y })
		}
	case []any:
		for i, x := range v {
			set("", x, func(y any) { v[i] = y })
		}
	}
}

// thousands is f rounded to a whole number, its thousands apart: 12,345.
func thousands(f float64) string {
	s := strconv.FormatFloat(f, 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if len(s) > 3 && !strings.ContainsAny(s, "eIN") {
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		s = b.String()
	}
	if neg {
		s = "-" + s
	}
	return s
}

// clock is d as a person reads a run's time: 42s, 3m07s, 2h05m.
func clock(d time.Duration) string {
	if d >= 10*time.Second {
		d = d.Round(time.Second)
	}
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// progress keeps the bar of a run on a terminal up to date: the epoch,
// how far through the run's steps, the last loss, the rate, the time so far
// and the time left, at most ten times a second. It also counts the run's
// samples for its summary.
type progress struct {
	screen      *screen
	total, done int
	epochs      int
	start       time.Time
	done0       int       // steps done before this process started (a resumed run)
	rows        int       // samples trained in this process
	lastStep    time.Time // when the last of them was
	last        time.Time
	rateFrom    time.Time
	rateSamples int
	rate        float64
}

// newProgress starts the bar of a run of total steps, done of them already.
func newProgress(log *runLog, total, done, epochs int) *progress {
	now := time.Now()
	return &progress{screen: log.screen, total: total, done: done, done0: done, epochs: epochs, start: now, rateFrom: now}
}

func (p *progress) step(epoch int, loss float64, rows int) {
	p.done++
	p.rows += rows
	p.lastStep = time.Now()
	p.rateSamples += rows
	if p.screen == nil || !p.screen.tty {
		return
	}
	now := time.Now()
	if d := now.Sub(p.rateFrom); d >= time.Second {
		p.rate, p.rateFrom, p.rateSamples = float64(p.rateSamples)/d.Seconds(), now, 0
	}
	if now.Sub(p.last) < 100*time.Millisecond && p.done < p.total {
		return
	}
	p.last = now
	const cells = 30
	filled := cells * p.done / max(1, p.total)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", cells-filled)
	text := fmt.Sprintf("epoch %d/%d [%s] %d/%d loss %.4g", epoch+1, p.epochs, bar, p.done, p.total, loss)
	if p.rate > 0 {
		text += " " + thousands(p.rate) + " samples/s"
	}
	elapsed := now.Sub(p.start)
	text += " " + clock(elapsed)
	if n := p.done - p.done0; n > 0 && p.done < p.total {
		text += ", " + clock(time.Duration(float64(elapsed)/float64(n)*float64(p.total-p.done))) + " left"
	}
	if w := p.screen.width() - 1; len(text) > w { // a wrapped bar could not be erased
		text = text[:max(0, w)]
	}
	p.screen.setBar(text)
}

func (p *progress) finish() {
	if p.screen != nil {
		p.screen.setBar("")
	}
}

// epochSum adds up an epoch's steps for its summary.
type epochSum struct {
	loss  float64
	steps int
	rows  int
	start time.Time
}

func (e *epochSum) add(loss float64, rows int) {
	if e.steps == 0 && e.start.IsZero() {
		e.start = time.Now()
	}
	e.loss += loss
	e.steps++
	e.rows += rows
}

// evalPoint is the last evaluation's outcome.
type evalPoint struct {
	step      int
	split     string
	loss, acc float64
}

// epochSummary logs the epoch that just ended: its mean step loss, the
// evaluation at its end, its samples/s and its time, as one line a person
// reads (Keras prints one such line an epoch).
func (r *trainRun) epochSummary() {
	e := r.epochSum
	r.epochSum = epochSum{start: time.Now()}
	if e.steps == 0 {
		return
	}
	secs := time.Since(e.start).Seconds()
	mean := e.loss / float64(e.steps)
	msg := fmt.Sprintf("epoch %d/%d: loss %.4g", r.epoch+1, r.cfg.Train.Epochs, mean)
	ev := r.log.event("epoch").Int("epoch", r.epoch+1).Int("epochs", r.cfg.Train.Epochs).Float64("loss", mean).
		Float64("samples_per_sec", float64(e.rows)/secs).Float64("seconds", secs)
	if p := r.lastEval; p.step == r.step {
		msg += fmt.Sprintf(", %s loss %.4g", p.split, p.loss)
		ev = ev.Float64(p.split+"_loss", p.loss)
		if p.acc == p.acc {
			msg += fmt.Sprintf(", %s accuracy %.2f%%", p.split, 100*p.acc)
			ev = ev.Float64(p.split+"_accuracy", p.acc)
		}
	}
	msg += fmt.Sprintf(", %s samples/s, %.3g s", thousands(float64(e.rows)/secs), secs)
	ev.Msg(msg)
}
