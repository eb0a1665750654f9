// Command epochrate prints the training samples per second of a train log: the
// samples of every step event after the first, over the time between the first
// and the last step event.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: epochrate LOG.jsonl")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "epochrate:", err)
		os.Exit(1)
	}
	defer f.Close()
	var first, last time.Time
	samples := 0.0
	var batch float64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Event  string    `json:"event"`
			Time   time.Time `json:"time"`
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
			if first.IsZero() {
				first = ev.Time
			} else {
				samples += batch
			}
			last = ev.Time
		}
	}
	if !last.After(first) {
		fmt.Fprintln(os.Stderr, "epochrate: fewer than two step events")
		os.Exit(1)
	}
	fmt.Printf("%.0f\n", samples/last.Sub(first).Seconds())
}
