// Command epochrate prints the training samples per second of a train log: the
// samples of the steps after the first step event up to the last, over the
// time between the two events. Any log.every works; the step events of one
// epoch of full batches give an exact count. With -from N the step events
// before step N are left out (a run's tuning steps, say).
//
//	epochrate [-from N] LOG.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	from := flag.Int("from", 0, "leave out the step events before this step")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: epochrate [-from N] LOG.jsonl")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "epochrate:", err)
		os.Exit(1)
	}
	defer f.Close()
	var first, last time.Time
	var firstStep, lastStep int
	var batch float64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Event  string    `json:"event"`
			Time   time.Time `json:"time"`
			Step   int       `json:"step"`
			Config struct {
				Data struct {
					BatchSize float64 `json:"batch_size"`
				} `json:"data"`
			} `json:"config"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev.Event {
		case "run_start":
			batch = ev.Config.Data.BatchSize
		case "step":
			if ev.Step < *from {
				continue
			}
			if first.IsZero() {
				first, firstStep = ev.Time, ev.Step
			}
			last, lastStep = ev.Time, ev.Step
		}
	}
	if !last.After(first) {
		fmt.Fprintln(os.Stderr, "epochrate: fewer than two step events")
		os.Exit(1)
	}
	fmt.Printf("%.0f\n", float64(lastStep-firstStep)*batch/last.Sub(first).Seconds())
}
