package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/pipeline/remote"
)

const workerUsage = "usage: train worker --listen HOST:PORT [--token-file FILE] [--tls-cert FILE --tls-key FILE --tls-ca FILE] [--advertise HOST:PORT] [--log-dir DIR] [--metrics HOST:PORT]"

// runWorker serves stage actors for coordinators until ctx ends (SIGINT or
// SIGTERM), then drops its stages and returns nil. It prints the address it
// listens on to stdout and logs to <log-dir>/worker-<time>-<pid>.jsonl and stderr.
func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	listen := fs.String("listen", "", "HOST:PORT to serve pipeline stages on (port 0 picks one)")
	tokenFile := fs.String("token-file", "", "a file holding the token coordinators must present (or PIPETRAIN_TOKEN)")
	logDir := fs.String("log-dir", "logs", "the directory of the worker's JSONL log")
	advertise := fs.String("advertise", "", "HOST:PORT coordinators reach this worker at, if not --listen (a proxy or NAT)")
	metricsAddr := fs.String("metrics", "", "HOST:PORT to serve Prometheus metrics of the hosted stages on (port 0 picks one)")
	var t remote.TLS
	tlsFlags(fs, &t)
	if err := parseFlags(fs, args, workerUsage); err != nil {
		return err
	}
	if *listen == "" {
		return badInputf("worker: --listen HOST:PORT is required")
	}
	token, err := readToken(*tokenFile)
	if err != nil {
		return err
	}
	if err := checkTLS(t); err != nil {
		return err
	}
	if err := os.MkdirAll(*logDir, 0o755); err != nil {
		return badInputf("worker: --log-dir %q: %v", *logDir, err)
	}
	path := filepath.Join(*logDir, fmt.Sprintf("worker-%s-%d.jsonl", time.Now().UTC().Format("20060102-150405"), os.Getpid()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return badInputf("worker: --log-dir %q: %v", *logDir, err)
	}
	defer f.Close()
	log := zerolog.New(zerolog.MultiLevelWriter(f, stderr)).With().Timestamp().Logger()
	w, err := remote.NewWorker(remote.WorkerConfig{Listen: *listen, Advertise: *advertise, Token: token, TLS: t, Logger: &log})
	if err != nil {
		return badInputf("worker: --listen %s: %v", *listen, err)
	}
	log.Info().Str("event", "worker_start").Str("listen", w.Addr()).Str("version", version()).
		Str("protocol", remote.Protocol).Int("cpus", runtime.NumCPU()).Int("gomaxprocs", runtime.GOMAXPROCS(0)).
		Str("log_file", path).Msg("worker listening")
	if *metricsAddr != "" {
		var c actorCollector
		c.setSource(w.Actors)
		addr, stop, err := serveMetrics(*metricsAddr, actorRegistry(&c))
		if err != nil {
			w.Close()
			return fmt.Errorf("worker: --metrics: %w", err)
		}
		defer stop()
		log.Info().Str("event", "metrics").Str("address", addr).Msg("serving Prometheus metrics at http://" + addr + "/metrics")
	}
	fmt.Fprintf(stdout, "listening on %s\n", w.Addr())
	<-ctx.Done()
	w.Close()
	log.Info().Str("event", "worker_stop").Msg("worker stopped")
	return f.Sync()
}

// readToken returns the token of --token-file, else of PIPETRAIN_TOKEN, else "".
func readToken(file string) (string, error) {
	if file == "" {
		return os.Getenv("PIPETRAIN_TOKEN"), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", badInputf("--token-file: %v", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", badInputf("--token-file %s: the file is empty", file)
	}
	return token, nil
}

// version is the module version the binary was built from.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// tlsFlags adds the TLS files' flags to fs.
func tlsFlags(fs *flag.FlagSet, t *remote.TLS) {
	fs.StringVar(&t.Cert, "tls-cert", "", "PEM certificate this process serves its links with")
	fs.StringVar(&t.Key, "tls-key", "", "PEM key of --tls-cert")
	fs.StringVar(&t.CA, "tls-ca", "", "PEM authority that signed the peers' certificates")
}

// checkTLS refuses a partial set of TLS files, before anything starts.
func checkTLS(t remote.TLS) error {
	if t != (remote.TLS{}) && (t.Cert == "" || t.Key == "" || t.CA == "") {
		return badInputf("--tls-cert, --tls-key and --tls-ca go together (a coordinator both dials its workers and is dialled back)")
	}
	for _, f := range []string{t.Cert, t.Key, t.CA} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return badInputf("TLS: %v", err)
		}
	}
	return nil
}
