// Command train trains a model described by a TOML config file, and
// evaluates and runs the models it trained.
//
//	train --config FILE [--set KEY=VALUE]... [--resume] [--token-file FILE] [--tls-cert FILE --tls-key FILE --tls-ca FILE] [--log-format auto|json|console] [--verbose]
//	train worker --listen HOST:PORT [--token-file FILE] [--tls-cert FILE --tls-key FILE --tls-ca FILE] [--advertise HOST:PORT] [--log-dir DIR] [--metrics HOST:PORT]
//	train eval --checkpoint DIR [--config FILE] [--set KEY=VALUE]... [--log-format auto|json|console]
//	train predict --checkpoint DIR --input FILE [--output FILE]
//	train export --checkpoint DIR --onnx FILE
//	train export --checkpoint DIR --hf OUT [--drop-head-bias]
//	train import --hf FILE.safetensors --config FILE --out DIR [--set KEY=VALUE]...
//	train sample --checkpoint DIR [--prompt TEXT] [--tokens N] [--temperature T] [--top_k K] [--top_p P] [--seed S]
//	train prepare --config FILE [--set KEY=VALUE]... [--out DIR]
//	train plan --config FILE [--set KEY=VALUE]... [--hosts N] [--bandwidth RATE] [--latency DURATION]
//	           [--simulate [--stages P] [--micro-batches M]]
//	train help [COMMAND]
//	train --version
//
// train --help (or help) lists the commands; each command's --help gives
// its usage and flags.
//
// eval prints the loss and accuracy of a checkpoint's model on the test
// split of the data it was trained on, as one JSON line; --set may change
// seed, data.* and log.dir. predict writes the model's predictions for the
// samples of a CSV file, an IDX image file or a PNG image as CSV:
// index,class,p0,…,pK (index,value for regression).
// export writes the model as an ONNX graph, or with --hf a GPT as
// Hugging Face's GPT-2 (model.safetensors and config.json); import turns
// GPT-2's weights in that layout into a checkpoint of the config's model,
// to fine-tune with --resume. sample prints text a language model writes.
// prepare tokenizes the text a config names once, into train.bin, val.bin
// and meta.json, which data.name = "tokens" trains from without reading
// them into memory. plan prints the layouts a run would consider and the
// step time the cost model predicts for each, for hosts this machine may
// not have, without training; with --simulate, each schedule's step,
// bubble and peak activations as a simulator replays it over the layers'
// measured costs, for stages this machine may not have the cores for.
//
// Exit status: 0 done; 2 the command line, config or data is wrong; 1 training
// failed (the last checkpoint is kept); 130 interrupted (a checkpoint is written).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/pipetrain/pipetrain/pipeline/remote"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK          = 0
	exitFailed      = 1
	exitBadInput    = 2
	exitInterrupted = 130
)

// exitError carries the exit status an error maps to.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// badInput marks err as the user's input being wrong (exit 2).
func badInput(err error) error { return &exitError{exitBadInput, err} }

func badInputf(format string, args ...any) error { return badInput(fmt.Errorf(format, args...)) }

// exitCode maps an error to the process exit status.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return exitFailed
}

// options are the parsed command line.
type options struct {
	config    string
	sets      []string
	resume    bool
	logFormat string
	verbose   bool
	tokenFile string
	tls       remote.TLS
}

type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// helpText is what --help asked for: written to stdout, exit 0.
type helpText string

func (h helpText) Error() string { return string(h) }

// usageOf is a command's usage line followed by its flags.
func usageOf(fs *flag.FlagSet, usage string) helpText {
	var b strings.Builder
	b.WriteString(usage + "\n\nflags:\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return helpText(b.String())
}

// parseFlags parses a subcommand's flags, allowing no other argument; its
// errors are exit-2 errors that end with the usage line, but for --help.
func parseFlags(fs *flag.FlagSet, args []string, usage string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return usageOf(fs, usage)
		}
		return badInputf("%s: %v (%s)", fs.Name(), err, usage)
	}
	if fs.NArg() > 0 {
		return badInputf("%s: unexpected argument %q (%s)", fs.Name(), fs.Arg(0), usage)
	}
	return nil
}

// parseArgs parses the command line; its errors are exit-2 errors.
func parseArgs(args []string) (*options, error) {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := &options{}
	fs.StringVar(&o.config, "config", "", "the TOML config file")
	fs.Var((*setFlags)(&o.sets), "set", "override a config key: KEY=VALUE (repeatable)")
	fs.BoolVar(&o.resume, "resume", false, "continue from the newest checkpoint in train.checkpoint_dir")
	fs.StringVar(&o.logFormat, "log-format", "auto", "stderr log format: auto, json or console")
	fs.BoolVar(&o.verbose, "verbose", false, "console: also each stage actor's counters (the JSON log always has them)")
	fs.StringVar(&o.tokenFile, "token-file", "", "a file holding the token shared with the workers (or PIPETRAIN_TOKEN)")
	tlsFlags(fs, &o.tls)
	version := fs.Bool("version", false, "print the version, commit and Go version, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, overview(fs)
		}
		return nil, badInputf("%v (usage: %s; train --help lists the commands)", err, trainUsage)
	}
	if *version {
		return nil, helpText(versionLine())
	}
	if fs.NArg() > 0 {
		return nil, badInputf("unexpected argument %q (usage: train --config FILE ...; train --help lists the commands)", fs.Arg(0))
	}
	if o.config == "" {
		return nil, badInputf("--config FILE is required (train --help lists the commands)")
	}
	if err := checkLogFormat(o.logFormat); err != nil {
		return nil, err
	}
	return o, nil
}

func checkLogFormat(f string) error {
	switch f {
	case "auto", "json", "console":
		return nil
	}
	return badInputf("--log-format %q: want auto, json or console", f)
}

// trainUsage is training's usage line.
const trainUsage = "train --config FILE [--set KEY=VALUE]... [--resume] [--token-file FILE] [--tls-cert FILE --tls-key FILE --tls-ca FILE] [--log-format auto|json|console] [--verbose]"

// command is a command besides training: its first argument, what it does
// in a line, and its body.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands are the commands besides training, in the order --help lists them.
var commands = []command{
	{"eval", "a checkpoint's loss and accuracy on the test split of its data", runEval},
	{"sample", "text from a language model's checkpoint", runSample},
	{"predict", "a checkpoint's predictions for a CSV, IDX or PNG file, as CSV", runPredict},
	{"export", "a checkpoint as ONNX, or a GPT as Hugging Face's GPT-2", runExport},
	{"import", "GPT-2's weights in Hugging Face's layout as a checkpoint to fine-tune", runImport},
	{"prepare", "a config's text tokenized once into token files", runPrepare},
	{"plan", "the layouts a run would consider and the step each is predicted to take", runPlan},
	{"worker", "serve stages of a run whose coordinator is elsewhere (pipeline.hosts)", runWorker},
}

// lookupCommand returns the command named name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// overview is train --help: the usage, the commands, training's flags and
// the exit statuses.
func overview(fs *flag.FlagSet) helpText {
	var b strings.Builder
	fmt.Fprintf(&b, "train trains the model a TOML config describes, as a pipeline of actors, and runs the models it trained.\n\n")
	fmt.Fprintf(&b, "usage:\n  %s\n  train COMMAND [FLAG]...\n  train help [COMMAND]\n  train --version\n\ncommands:\n", trainUsage)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-8s  %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, "  %-8s  %s\n", "help", "this text, or a command's usage and flags")
	b.WriteString("\ntraining's flags:\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	b.WriteString("\nexit status: 0 done; 2 the command line, config or data is wrong; 1 training failed (the last\ncheckpoint is kept); 130 interrupted (a checkpoint is written).\n")
	return helpText(b.String())
}

// help is train help [COMMAND].
func help(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	switch {
	case len(args) == 0:
		_, err := parseArgs([]string{"--help"})
		return err
	case len(args) > 1:
		return badInputf("help: one command at most, got %q (usage: train help [COMMAND])", args)
	}
	if c, ok := lookupCommand(args[0]); ok {
		return c.run(ctx, []string{"--help"}, stdout, stderr)
	}
	return badInputf("help: no command %q (train --help lists them)", args[0])
}

// versionLine is train --version: the module's version, the commit it was
// built from and the Go that built it.
func versionLine() string {
	version, commit := "(devel)", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					commit += " (modified)"
				}
			}
		}
	}
	return fmt.Sprintf("train %s, commit %s, %s\n", version, commit, runtime.Version())
}

// run is the whole command, returning its exit status. The last line it writes
// to stderr on failure begins "train: " and no panic escapes it.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	return runWith(ctx, args, os.Stdout, stderr)
}

// first is args' first, or "".
func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// runWith is run with the subcommands' results (eval's line, predict's CSV)
// written to stdout.
func runWith(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "train: internal error: %v\n", r)
			code = exitFailed
		}
	}()
	var err error
	if c, ok := lookupCommand(first(args)); ok {
		err = c.run(ctx, args[1:], stdout, stderr)
	} else if first(args) == "help" {
		err = help(ctx, args[1:], stdout, stderr)
	} else {
		var o *options
		if o, err = parseArgs(args); err == nil {
			err = runTrain(ctx, o, stderr)
		}
	}
	if err == nil {
		return exitOK
	}
	var h helpText
	if errors.As(err, &h) {
		fmt.Fprint(stdout, string(h))
		return exitOK
	}
	fmt.Fprintf(stderr, "train: %v\n", err)
	return exitCode(err)
}
