// Command serve answers predictions of a trained pipetrain model over HTTP.
//
//	go run ./examples/serve --checkpoint checkpoints/mlp [--listen 127.0.0.1:8080]
//
// POST /predict with a PNG image (Content-Type: image/png) of a model of
// one-channel images, or with JSON: one sample's raw values as an array,
// or several samples as an array of arrays, as the data set held them (the
// digits' 0..16, MNIST's 0..255, a CSV's columns). The answer is JSON, one
// object per sample:
//
//	{"predictions": [{"class": "7", "class_index": 7, "probabilities": [0.001, ...]}]}
//
// ("values" instead of class and probabilities for a regression model). A
// bad request is answered 400 with {"error": "..."}. The model is loaded
// once; model.Model serves every request's goroutine at once.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/tensor"
)

// maxBody bounds a request, so that one cannot make the server read
// without end.
const maxBody = 32 << 20

func main() {
	checkpoint := flag.String("checkpoint", "checkpoints", "a checkpoint folder, or a checkpoint_dir (its newest)")
	listen := flag.String("listen", "127.0.0.1:8080", "HOST:PORT to serve on (port 0 picks one)")
	flag.Parse()
	m, err := model.Load(*checkpoint)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: handler(m), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	fmt.Printf("serving on http://%s/predict\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// prediction is one sample's answer.
type prediction struct {
	Class         string    `json:"class,omitempty"`
	ClassIndex    *int      `json:"class_index,omitempty"` // the class's place in the model's classes
	Probabilities []float32 `json:"probabilities,omitempty"`
	Values        []float32 `json:"values,omitempty"`
}

func handler(m *model.Model) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /predict", func(w http.ResponseWriter, r *http.Request) {
		raw, err := inputs(m, r)
		if err != nil {
			reply(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		x, err := m.Prepare(raw)
		if err != nil {
			reply(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		out, err := m.Predict(x)
		if err != nil {
			reply(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		reply(w, http.StatusOK, map[string][]prediction{"predictions": answers(m, out)})
	})
	return mux
}

// inputs reads the request's samples as raw values, [N, features].
func inputs(m *model.Model, r *http.Request) (*tensor.Tensor, error) {
	body := http.MaxBytesReader(nil, r.Body, maxBody)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "image/png") {
		img, err := png.Decode(body)
		if err != nil {
			return nil, fmt.Errorf("reading the PNG image: %v", err)
		}
		b := img.Bounds()
		return m.RawImages(model.Grey(img), 1, b.Dy(), b.Dx())
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var rows [][]float64
	if err := json.Unmarshal(data, &rows); err != nil {
		var row []float64
		if err := json.Unmarshal(data, &row); err != nil {
			return nil, errors.New("want a PNG image (Content-Type: image/png) or JSON: an array of numbers, or an array of such arrays")
		}
		rows = [][]float64{row}
	}
	f := m.Features()
	flat := make([]float64, 0, len(rows)*f)
	for i, row := range rows {
		if len(row) != f {
			return nil, fmt.Errorf("sample %d has %d values, the model takes %d", i, len(row), f)
		}
		flat = append(flat, row...)
	}
	return tensor.FromFloat64s(tensor.Float64, flat, len(rows), f), nil
}

func answers(m *model.Model, out *tensor.Tensor) []prediction {
	n, k := out.Dim(0), out.Dim(1)
	v := out.Float32s()
	preds := make([]prediction, n)
	for i := range preds {
		row := v[i*k : (i+1)*k]
		if m.Regression() {
			preds[i].Values = row
			continue
		}
		best := 0
		for j, p := range row {
			if p > row[best] {
				best = j
			}
		}
		preds[i] = prediction{Class: m.Classes[best], ClassIndex: &best, Probabilities: row}
	}
	return preds
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
