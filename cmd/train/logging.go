package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/term"
)

func init() {
	zerolog.TimeFieldFormat = time.RFC3339Nano
}

// runLog is the run's one logger: every event goes to <log.dir>/<run_id>.jsonl
// as JSON and to stderr, as console text on a terminal and JSON otherwise.
type runLog struct {
	zerolog.Logger
	id       string
	path     string
	file     *os.File
	console  io.Writer // stderr
	terminal bool      // stderr is a terminal: draw a progress bar
	screen   *screen   // the console form's writer, nil for JSON on stderr
}

func newRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func openRunLog(dir, format string, stderr io.Writer, verbose bool) (*runLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, badInputf("log.dir = %q: %v", dir, err)
	}
	id := newRunID()
	path := filepath.Join(dir, id+".jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, badInputf("log.dir = %q: %v", dir, err)
	}
	var console io.Writer = stderr
	var scr *screen
	if format == "console" || format == "auto" && isTerminal(stderr) {
		scr = &screen{out: stderr, tty: isTerminal(stderr)}
		console = consoleFilter{w: consoleWriter(scr), verbose: verbose}
	}
	l := zerolog.New(zerolog.MultiLevelWriter(f, console)).With().Timestamp().Str("run_id", id).Logger()
	return &runLog{Logger: l, id: id, path: path, file: f, console: stderr, terminal: isTerminal(stderr), screen: scr}, nil
}

// Close flushes the log file to disk.
func (l *runLog) Close() error {
	if err := l.file.Sync(); err != nil {
		l.file.Close()
		return fmt.Errorf("log %s: %w", l.path, err)
	}
	return l.file.Close()
}

// event starts an Info event with the contract's event field.
func (l *runLog) event(name string) *zerolog.Event {
	return l.Info().Str("event", name)
}

// consoleFilter leaves the stage actors' counters to the JSON log unless
// verbose: they mean little to a person watching a run.
type consoleFilter struct {
	w       io.Writer
	verbose bool
}

func (f consoleFilter) Write(p []byte) (int, error) {
	if !f.verbose && bytes.Contains(p, []byte(`"event":"stage"`)) {
		return len(p), nil
	}
	return f.w.Write(p)
}
