package main

import (
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/pipeline/recipe"
)

// metrics is what log.metrics serves at /metrics: the training loop writes
// it, a scrape reads it from the HTTP server's goroutines.
type metrics struct {
	steps                             atomic.Int64
	loss, lr, rate, testLoss, testAcc atomicFloat
	actors                            actorCollector
}

// atomicFloat is a float64 read and written whole from any goroutine.
type atomicFloat struct{ bits atomic.Uint64 }

func (f *atomicFloat) Store(v float64) { f.bits.Store(math.Float64bits(v)) }
func (f *atomicFloat) Load() float64   { return math.Float64frombits(f.bits.Load()) }

// actorCollector reports each actor of its source (the current engine, or
// a worker's stages), labelled by name.
type actorCollector struct {
	mu     sync.Mutex
	source func() []recipe.ActorStatus
	since  time.Time                // when the engine started, or the last scrape
	busy   map[string]time.Duration // each actor's busy time at that moment
}

var (
	mailboxDesc  = prometheus.NewDesc("pipetrain_actor_mailbox_length", "Messages waiting in the actor's mailbox.", []string{"actor"}, nil)
	messagesDesc = prometheus.NewDesc("pipetrain_actor_messages_total", "Messages the actor has taken since its engine started.", []string{"actor"}, nil)
	busyDesc     = prometheus.NewDesc("pipetrain_actor_busy_seconds_total", "Time the actor has spent working since its engine started.", []string{"actor"}, nil)
	fractionDesc = prometheus.NewDesc("pipetrain_actor_busy_fraction", "The share of the time since the previous scrape the actor spent working.", []string{"actor"}, nil)
)

// setEngine makes e the engine the metrics show (auto tuning changes it).
func (c *actorCollector) setEngine(e *pipeline.Engine) { c.setSource(e.Actors) }

func (c *actorCollector) setSource(f func() []recipe.ActorStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.source, c.since, c.busy = f, time.Now(), map[string]time.Duration{}
}

func (c *actorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mailboxDesc, messagesDesc, busyDesc, fractionDesc} {
		ch <- d
	}
}

func (c *actorCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.source == nil {
		return
	}
	now := time.Now()
	wall := now.Sub(c.since)
	for _, a := range c.source() {
		if a.Host != "" {
			continue // its worker serves its counters
		}
		ch <- prometheus.MustNewConstMetric(mailboxDesc, prometheus.GaugeValue, float64(a.Mailbox), a.Name)
		ch <- prometheus.MustNewConstMetric(messagesDesc, prometheus.CounterValue, float64(a.Messages), a.Name)
		ch <- prometheus.MustNewConstMetric(busyDesc, prometheus.CounterValue, a.Busy.Seconds(), a.Name)
		if wall > 0 {
			ch <- prometheus.MustNewConstMetric(fractionDesc, prometheus.GaugeValue, (a.Busy-c.busy[a.Name]).Seconds()/wall.Seconds(), a.Name)
		}
		c.busy[a.Name] = a.Busy
	}
	c.since = now
}

// actorRegistry returns a registry of c's metrics, with the Go runtime's
// and the process's own: a worker's.
func actorRegistry(c *actorCollector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// registry returns the run's metrics as a Prometheus registry.
func (m *metrics) registry() *prometheus.Registry {
	reg := actorRegistry(&m.actors)
	gauge := func(name, help string, f *atomicFloat) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f.Load)
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "pipetrain_steps_total", Help: "Optimizer steps completed."},
			func() float64 { return float64(m.steps.Load()) }),
		gauge("pipetrain_loss", "The mean loss of the last step's mini-batch.", &m.loss),
		gauge("pipetrain_learning_rate", "The last step's learning rate.", &m.lr),
		gauge("pipetrain_samples_per_second", "Training samples a second over the last log.every steps.", &m.rate),
		gauge("pipetrain_test_loss", "The last evaluation's test loss (NaN before the first).", &m.testLoss),
		gauge("pipetrain_test_accuracy", "The last evaluation's test accuracy (NaN before the first or for regression).", &m.testAcc),
	)
	return reg
}

// serveMetrics serves reg at http://addr/metrics until stop is called, and
// returns the address it listens on (port 0 picks one).
func serveMetrics(addr string, reg *prometheus.Registry) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, badInputf("metrics address %q: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln) // returns when stop closes the server
	}()
	return ln.Addr().String(), func() {
		srv.Close()
		<-done
	}, nil
}
