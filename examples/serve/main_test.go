package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/dataset"
	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// trainDigits trains a small MLP on the embedded digits, saves it as a
// checkpoint under dir as train would, and returns the test split.
func trainDigits(t *testing.T, dir string) *dataset.Set {
	t.Helper()
	all, err := dataset.Digits()
	if err != nil {
		t.Fatal(err)
	}
	train, test, err := dataset.Split(all, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	d := model.Description{Format: model.Format, Sample: []int{1, 8, 8}, Seed: 1, Loss: nn.CrossEntropy,
		Classes: train.Classes, Input: model.Input{Data: "digits", Divide: 16},
		Layers: []nn.Spec{{Type: "linear", Units: 64, Init: nn.HeUniform}, {Type: "relu"}, {Type: "linear", Units: 10, Init: nn.XavierUniform}}}
	layers, err := nn.BuildShape(d.Layers, d.Sample, d.Seed, tensor.Float32, 0, len(d.Layers))
	if err != nil {
		t.Fatal(err)
	}
	seq := &nn.Sequential{Layers: layers, Loss: d.Loss}
	opt, err := optim.Spec{Kind: "sgd", Momentum: 0.9}.New()
	if err != nil {
		t.Fatal(err)
	}
	ps := seq.Params() // optimizers take the layers' parameters as they are
	loader := dataset.NewLoader(train, 32, true, 1)
	step := 0
	for epoch := range 10 {
		for b := range loader.BatchesPerEpoch() {
			x, labels, _ := loader.Batch(epoch, b)
			step++
			seq.ZeroGrad()
			if _, err := seq.TrainStep(step, x, nn.Target{Labels: labels}, 1); err != nil {
				t.Fatal(err)
			}
			if err := opt.Step(ps, 0.05); err != nil {
				t.Fatal(err)
			}
		}
	}
	weights := map[string]*tensor.Tensor{}
	for _, p := range seq.Params() {
		weights[p.Name] = p.Value
	}
	desc, _ := json.Marshal(d)
	if _, err := checkpoint.Save(dir, checkpoint.Meta{Step: step, Model: desc}, weights, nil); err != nil {
		t.Fatal(err)
	}
	return test
}

// TestServe: the example answers a POSTed PNG of a digit with its class,
// JSON rows with theirs, and a bad request with 400.
func TestServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example")
	}
	dir := t.TempDir()
	test := trainDigits(t, filepath.Join(dir, "checkpoints"))
	bin := filepath.Join(dir, "serve")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--checkpoint", filepath.Join(dir, "checkpoints"), "--listen", "127.0.0.1:0")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Error("serve did not stop within 10 s of SIGTERM")
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		io.Copy(io.Discard, stdout)
	}()
	var url string
	select {
	case s := <-line:
		url = strings.TrimSpace(strings.TrimPrefix(s, "serving on "))
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not print its address within 20 s")
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("serve printed %q", url)
	}
	m, err := model.Load(filepath.Join(dir, "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	post := func(contentType string, body []byte) (int, map[string]any) {
		t.Helper()
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(url, contentType, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("the answer is not JSON: %v", err)
		}
		return resp.StatusCode, out
	}
	classOf := func(out map[string]any) string {
		preds := out["predictions"].([]any)
		return preds[0].(map[string]any)["class"].(string)
	}
	right := 0
	x := test.X.Float32s()
	for i := range 20 {
		// the digit as an 8×8 grey PNG: features are counts/16, pixels counts/16·255
		img := image.NewGray(image.Rect(0, 0, 8, 8))
		raw := make([]float64, 64)
		for j := range 64 {
			img.Pix[j] = uint8(math.Round(float64(x[i*64+j]) * 255))
			raw[j] = float64(x[i*64+j]) * 16
		}
		var buf bytes.Buffer
		png.Encode(&buf, img)
		code, out := post("image/png", buf.Bytes())
		if code != http.StatusOK {
			t.Fatalf("digit %d: status %d: %v", i, code, out)
		}
		rawT, _ := m.RawImages(model.Grey(img), 1, 8, 8)
		feats, _ := m.Prepare(rawT)
		want, _ := m.Classify(feats)
		if got := classOf(out); got != m.Classes[want[0]] {
			t.Errorf("digit %d: class %s, Classify of the same image %s", i, got, m.Classes[want[0]])
		}
		if got := out["predictions"].([]any)[0].(map[string]any)["class_index"]; got != float64(want[0]) {
			t.Errorf("digit %d: class_index %v, Classify of the same image %d", i, got, want[0])
		}
		if classOf(out) == test.Classes[test.Labels[i]] {
			right++
		}
		rows, _ := json.Marshal([][]float64{raw, raw})
		if code, out := post("application/json", rows); code != http.StatusOK || len(out["predictions"].([]any)) != 2 {
			t.Fatalf("digit %d as JSON rows: status %d: %v", i, code, out)
		}
	}
	if right < 18 {
		t.Errorf("%d of 20 test digits as PNG got their label", right)
	}
	for _, c := range []struct {
		ctype, body, want string
	}{
		{"image/png", "not a png", "reading the PNG image"},
		{"application/json", "[1, 2, 3]", "has 3 values, the model takes 64"},
		{"application/json", "{", "want a PNG image"},
	} {
		code, out := post(c.ctype, []byte(c.body))
		if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(out["error"]), c.want) {
			t.Errorf("%s %q: status %d, %v; want 400 and %q", c.ctype, c.body, code, out, c.want)
		}
	}
}
