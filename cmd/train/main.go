// Command train trains a model described by a TOML config file, and
// evaluates and runs the models it trained.
//
//	train --config FILE [--set KEY=VALUE]... [--resume] [--token-file FILE] [--tls-cert FILE --tls-key FILE --tls-ca FILE] [--log-format auto|json|console]
//	train worker --listen HOST:PORT [--token-file FILE] [--tls-cert FILE --tls-key FILE --tls-ca FILE] [--advertise HOST:PORT] [--log-dir DIR] [--metrics HOST:PORT]
//	train eval --checkpoint DIR [--config FILE] [--set KEY=VALUE]... [--log-format auto|json|console]
//	train predict --checkpoint DIR --input FILE [--output FILE]
//	train export --checkpoint DIR --onnx FILE
//	train export --checkpoint DIR --hf OUT [--drop-head-bias]
//	train import --hf FILE.safetensors --config FILE --out DIR [--set KEY=VALUE]...
//	train sample --checkpoint DIR [--prompt TEXT] [--tokens N] [--temperature T] [--top_k K] [--top_p P] [--seed S]
//	train prepare --config FILE [--set KEY=VALUE]... [--out DIR]
//	train plan --config FILE [--set KEY=VALUE]... [--hosts N] [--bandwidth RATE] [--latency DURATION]
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
// not have, without training.
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
	tokenFile string
	tls       remote.TLS
}

type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// parseFlags parses a subcommand's flags, allowing no other argument; its
// errors are exit-2 errors that end with the usage line.
func parseFlags(fs *flag.FlagSet, args []string, usage string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return badInputf("%s", usage)
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
	fs.StringVar(&o.tokenFile, "token-file", "", "a file holding the token shared with the workers (or PIPETRAIN_TOKEN)")
	tlsFlags(fs, &o.tls)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, badInputf("usage: train --config FILE [--set KEY=VALUE]... [--resume] [--token-file FILE] [--tls-cert FILE --tls-key FILE --tls-ca FILE] [--log-format auto|json|console]%s", commandsUsage)
		}
		return nil, badInputf("%v (usage: train --config FILE [--set KEY=VALUE]... [--resume] [--token-file FILE] [--tls-cert FILE --tls-key FILE --tls-ca FILE] [--log-format auto|json|console])", err)
	}
	if fs.NArg() > 0 {
		return nil, badInputf("unexpected argument %q (usage: train --config FILE ...)", fs.Arg(0))
	}
	if o.config == "" {
		return nil, badInputf("--config FILE is required")
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

// commandsUsage names the commands besides training, for --help, on the
// usage's line: each one's --help gives its own usage.
const commandsUsage = "; other commands: train worker | eval | predict | export (--onnx FILE | --hf OUT) | import --hf FILE | sample | prepare | plan, each with --help for its usage"

// subcommands are the commands besides training, by their first argument.
var subcommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"worker":  runWorker,
	"eval":    runEval,
	"predict": runPredict,
	"export":  runExport,
	"sample":  runSample,
	"import":  runImport,
	"prepare": runPrepare,
	"plan":    runPlan,
}

// run is the whole command, returning its exit status. The last line it writes
// to stderr on failure begins "train: " and no panic escapes it.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	return runWith(ctx, args, os.Stdout, stderr)
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
	if len(args) > 0 && subcommands[args[0]] != nil {
		err = subcommands[args[0]](ctx, args[1:], stdout, stderr)
	} else {
		var o *options
		if o, err = parseArgs(args); err == nil {
			err = runTrain(ctx, o, stderr)
		}
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "train: %v\n", err)
	return exitCode(err)
}
