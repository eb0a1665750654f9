package main

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildTrain builds the command into dir and returns its path.
func buildTrain(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "train")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// worker is a `train worker` process started by a test.
type worker struct {
	addr   string
	cmd    *exec.Cmd
	logDir string
	args   []string // its flags beyond --listen and --log-dir
}

// startWorker runs `train worker` on listen (127.0.0.1:0 picks a port), and
// kills it at the test's end.
func startWorker(t *testing.T, bin, listen string, extra ...string) *worker {
	t.Helper()
	logDir := t.TempDir()
	cmd := exec.Command(bin, append([]string{"worker", "--listen", listen, "--log-dir", logDir}, extra...)...)
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker{cmd: cmd, logDir: logDir, args: extra}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case s := <-line:
		w.addr = strings.TrimPrefix(s, "listening on ")
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not print its address within 20 s")
	}
	if w.addr == "" {
		t.Fatal("the worker exited without listening")
	}
	return w
}

// hostsSet is the --set that places the stages on ws.
func hostsSet(ws ...*worker) string {
	var q []string
	for _, w := range ws {
		q = append(q, fmt.Sprintf("%q", w.addr))
	}
	return "pipeline.hosts=[" + strings.Join(q, ", ") + "]"
}

// coordinate runs `train` as a coordinator process in dir and returns its
// exit status, stderr and events.
func coordinate(t *testing.T, bin, dir, cfg string, args ...string) runResult {
	t.Helper()
	path := filepath.Join(dir, "run.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "logs")
	cmd := exec.Command(bin, append([]string{"--config", path, "--log-format", "json", "--set", "log.dir=" + logDir,
		"--set", "train.checkpoint_dir=" + filepath.Join(dir, "checkpoints")}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("train %v did not end within 3 minutes", args)
	}
	return runResult{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), events: readEvents(t, logDir)}
}

// TestWorkersGiveIdenticalLosses: a coordinator and two `train worker`
// processes give the step losses, test accuracy and final weights of the same
// run in one process, bit for bit, with two replicas too.
func TestWorkersGiveIdenticalLosses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildTrain(t, t.TempDir())
	w1, w2 := startWorker(t, bin, "127.0.0.1:0"), startWorker(t, bin, "127.0.0.1:0")
	for k, layout := range [][]string{
		{"--set", "pipeline.schedule=1f1b", "--set", "pipeline.stages=2", "--set", "pipeline.micro_batches=2"},
		{"--set", "pipeline.schedule=gpipe", "--set", "pipeline.stages=0", "--set", "pipeline.micro_batches=4"},
		{"--set", "pipeline.schedule=1f1b", "--set", "pipeline.stages=3", "--set", "pipeline.micro_batches=2", "--set", "model.layers.3.shards=2"}, // the CNN, a convolution sharded
		{"--set", "pipeline.schedule=1f1b", "--set", "pipeline.stages=2", "--set", "pipeline.micro_batches=2", "--set", "pipeline.replicas=2"},     // a replica a worker
	} {
		cfg := baseConfig
		if k == 2 {
			cfg = strings.Replace(cnnConfig, "epochs = 5", "epochs = 1", 1)
		}
		local, remote := t.TempDir(), t.TempDir()
		one := coordinate(t, bin, local, cfg, layout...)
		if one.code != 0 {
			t.Fatalf("one process: exit %d\n%s", one.code, lastLine(one.stderr))
		}
		spread := coordinate(t, bin, remote, cfg, append(layout, "--set", hostsSet(w1, w2))...)
		if spread.code != 0 {
			t.Fatalf("on workers: exit %d\n%s", spread.code, spread.stderr)
		}
		want, got := stepLosses(one.events), stepLosses(spread.events)
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%v: %d steps on workers, %d in one process", layout, len(got), len(want))
		}
		for s, l := range want {
			if got[s] != l {
				t.Errorf("%v: step %d: loss %v on workers, %v in one process", layout, s, got[s], l)
			}
		}
		evalOne, evalSpread := eventsNamed(one.events, "eval"), eventsNamed(spread.events, "eval")
		if len(evalOne) == 0 || fmt.Sprint(evalOne[len(evalOne)-1]["accuracy"]) != fmt.Sprint(evalSpread[len(evalSpread)-1]["accuracy"]) {
			t.Errorf("%v: final accuracy %v on workers, %v in one process", layout, evalSpread, evalOne)
		}
		// the same files, so a checkpoint resumes under either
		a, b := lastCheckpoint(t, local), lastCheckpoint(t, remote)
		for name, data := range a {
			if !bytes.Equal(data, b[name]) {
				t.Errorf("%v: the final checkpoints' %s differ", layout, name)
			}
		}
		for _, st := range eventsNamed(spread.events, "stage") {
			if st["host"] != w1.addr && st["host"] != w2.addr {
				t.Errorf("%v: stage event %v names no worker", layout, st)
			}
		}
	}
	// the coordinators' connections closing after runs that ended well are
	// no error (protoactor logs each a few ms after the process exits)
	time.Sleep(500 * time.Millisecond)
	for _, w := range []*worker{w1, w2} {
		if l := workerLogLine(w, `"level":"error"`); l != "" {
			t.Errorf("worker %s logged an error after runs that all ended well: %s", w.addr, l)
		}
	}
	// nor is a peer worker gone between runs
	_ = w2.cmd.Process.Kill()
	_ = w2.cmd.Wait()
	time.Sleep(500 * time.Millisecond)
	if l := workerLogLine(w1, `"level":"error"`); l != "" {
		t.Errorf("worker %s logged an error when its peer stopped between runs: %s", w1.addr, l)
	}
}

// lastCheckpoint returns the files of the newest checkpoint under dir.
func lastCheckpoint(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "step-*"))
	if len(dirs) == 0 {
		t.Fatalf("no checkpoint under %s", dir)
	}
	newest := dirs[len(dirs)-1] // step-numbered folders sort in step order
	files, _ := filepath.Glob(filepath.Join(newest, "*"))
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	if len(out) < 3 {
		t.Fatalf("checkpoint %s holds %d files", newest, len(out))
	}
	return out
}

// TestWrongToken: a coordinator with the wrong token is refused (exit 2,
// naming the host and the token) and the worker serves the next good run.
func TestWrongToken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildTrain(t, dir)
	tokenFile, wrong := filepath.Join(dir, "token"), filepath.Join(dir, "wrong")
	os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)
	os.WriteFile(wrong, []byte("guess"), 0o600)
	w := startWorker(t, bin, "127.0.0.1:0", "--token-file", tokenFile)
	layout := []string{"--set", "pipeline.schedule=1f1b", "--set", "pipeline.stages=2", "--set", hostsSet(w)}
	refused := coordinate(t, bin, t.TempDir(), baseConfig, append(layout, "--token-file", wrong)...)
	if refused.code != exitBadInput || !strings.Contains(lastLine(refused.stderr), w.addr) || !strings.Contains(lastLine(refused.stderr), "token") {
		t.Fatalf("wrong token: exit %d, last line %q; want 2 naming %s and the token", refused.code, lastLine(refused.stderr), w.addr)
	}
	if ok := coordinate(t, bin, t.TempDir(), baseConfig, append(layout, "--token-file", tokenFile)...); ok.code != 0 {
		t.Fatalf("the right token: exit %d\n%s", ok.code, ok.stderr)
	}
}

// TestCoordinatorGone: a worker whose coordinator is killed mid-run drops
// the run's stages within 10 s and serves the next run.
func TestCoordinatorGone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildTrain(t, t.TempDir())
	w := startWorker(t, bin, "127.0.0.1:0")
	dir := t.TempDir()
	path := filepath.Join(dir, "run.toml")
	os.WriteFile(path, []byte(strings.Replace(baseConfig, "epochs = 2", "epochs = 100000", 1)), 0o644)
	cmd := exec.Command(bin, "--config", path, "--log-format", "json", "--set", "log.dir="+filepath.Join(dir, "logs"),
		"--set", "train.checkpoint_dir="+filepath.Join(dir, "ck"), "--set", "pipeline.schedule=1f1b", "--set", "pipeline.stages=2",
		"--set", "pipeline.micro_batches=2", "--set", hostsSet(w))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for steps := 0; steps < 20 && sc.Scan(); {
		if strings.Contains(sc.Text(), `"event":"step"`) {
			steps++
		}
	}
	_ = cmd.Process.Kill()
	killed := time.Now()
	_ = cmd.Wait()
	// a run started at once waits for the worker to let the dead one go
	if r := coordinate(t, bin, t.TempDir(), baseConfig, "--set", "pipeline.schedule=1f1b", "--set", hostsSet(w)); r.code != 0 {
		t.Fatalf("the next run: exit %d\n%s", r.code, r.stderr)
	}
	for !workerLogHas(t, w, "run dropped") {
		if time.Since(killed) > 10*time.Second {
			t.Fatal("the worker did not drop the run within 10 s of its coordinator's death")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the next run ended %v after the coordinator was killed", time.Since(killed).Round(100*time.Millisecond))
}

// workerLogHas reports whether the worker's JSONL log holds text.
func workerLogHas(t *testing.T, w *worker, text string) bool { return workerLogLine(w, text) != "" }

// workerLogLine returns the first line of the worker's JSONL log that
// holds text, or "".
func workerLogLine(w *worker, text string) string {
	files, _ := filepath.Glob(filepath.Join(w.logDir, "*.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for l := range bytes.Lines(b) {
			if bytes.Contains(l, []byte(text)) {
				return string(bytes.TrimSpace(l))
			}
		}
	}
	return ""
}

// TestNonFiniteOnWorker: a layer on a worker that gives a non-finite value
// ends the run with exit 1 naming the layer, as in one process.
func TestNonFiniteOnWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildTrain(t, t.TempDir())
	w := startWorker(t, bin, "127.0.0.1:0")
	cfg := strings.Replace(baseConfig, "lr = 0.05", "lr = 1e30", 1)
	cfg = strings.Replace(cfg, "clip_norm = 5.0", "clip_norm = 0.0", 1)
	for _, hosts := range [][]string{nil, {"--set", hostsSet(w)}} {
		r := coordinate(t, bin, t.TempDir(), cfg, append([]string{"--set", "pipeline.schedule=1f1b", "--set", "pipeline.stages=0"}, hosts...)...)
		l := lastLine(r.stderr)
		if r.code != exitFailed || !strings.Contains(l, "non-finite") || !strings.Contains(l, "layer") {
			t.Fatalf("hosts %v: exit %d, last line %q; want 1 naming a layer's non-finite value", hosts, r.code, l)
		}
		t.Logf("hosts %v: %s", hosts, l)
	}
}

// tlsFiles are the PEM files of testCerts.
type tlsFiles struct{ cert, key, ca string }

func (f tlsFiles) args() []string {
	return []string{"--tls-cert", f.cert, "--tls-key", f.key, "--tls-ca", f.ca}
}

// TestWorkersOverTLS: with TLS on every link a run on workers gives the
// losses of one process; a coordinator without TLS cannot reach a TLS worker
// and is told so (exit 2, naming the host); half a set of TLS files is exit 2.
func TestWorkersOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildTrain(t, t.TempDir())
	certs := testCerts(t)
	w := startWorker(t, bin, "127.0.0.1:0", certs.args()...)
	layout := []string{"--set", "pipeline.schedule=1f1b", "--set", "pipeline.stages=2", "--set", "pipeline.micro_batches=2"}
	one := coordinate(t, bin, t.TempDir(), baseConfig, layout...)
	plain := coordinate(t, bin, t.TempDir(), baseConfig, append(layout, "--set", hostsSet(w))...)
	t.Logf("plaintext coordinator, TLS worker: %s", lastLine(plain.stderr))
	if plain.code != exitBadInput || !strings.Contains(lastLine(plain.stderr), w.addr) || !strings.Contains(lastLine(plain.stderr), "TLS") {
		t.Errorf("plaintext coordinator, TLS worker: exit %d, %q; want 2 naming %s", plain.code, lastLine(plain.stderr), w.addr)
	}
	half := coordinate(t, bin, t.TempDir(), baseConfig, "--tls-cert", certs.cert)
	if half.code != exitBadInput || !strings.Contains(lastLine(half.stderr), "--tls-key") {
		t.Errorf("--tls-cert alone: exit %d, %q; want 2 naming the missing flags", half.code, lastLine(half.stderr))
	}
	secure := coordinate(t, bin, t.TempDir(), baseConfig, append(append(layout, "--set", hostsSet(w)), certs.args()...)...)
	if secure.code != 0 {
		t.Fatalf("over TLS: exit %d\n%s", secure.code, secure.stderr)
	}
	want, got := stepLosses(one.events), stepLosses(secure.events)
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%d steps over TLS, %d in one process", len(got), len(want))
	}
	for s, l := range want {
		if got[s] != l {
			t.Errorf("step %d: loss %v over TLS, %v in one process", s, got[s], l)
		}
	}
}

// testCerts writes an authority and a certificate for 127.0.0.1 signed by
// it, shared by the test's processes.
func testCerts(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pipetrain test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(crand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	leafDER, err := x509.CreateCertificate(crand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return tlsFiles{cert: write("cert.pem", "CERTIFICATE", leafDER), key: write("key.pem", "EC PRIVATE KEY", keyDER), ca: write("ca.pem", "CERTIFICATE", caDER)}
}
