package pipeline

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/pipeline/remote"
)

// watchdog fails the step in flight when no message has moved for cfg.Hang, and
// logs a "hang" event with what every actor was doing.
func (e *Engine) watchdog() {
	defer e.stopped.Done()
	tick := time.NewTicker(max(e.cfg.Hang/8, 10*time.Millisecond))
	defer tick.Stop()
	last, since := e.graph.Moved.Load(), time.Now()
	var beat <-chan time.Time
	if e.hosts != nil {
		t := time.NewTicker(remote.BeatEvery)
		defer t.Stop()
		beat = t.C
	}
	for {
		select {
		case <-e.stop:
			return
		case <-beat:
			e.hosts.Beat()
		case now := <-tick.C:
			moved := e.graph.Moved.Load()
			if moved != last || !e.busy.Load() {
				last, since = moved, now
				continue
			}
			if now.Sub(since) < e.cfg.Hang {
				continue
			}
			err := e.hangReport()
			e.graph.Sent(e.coord)
			e.root.Send(e.coord, &actors.Hang{Err: err})
			since = now
		}
	}
}

func (e *Engine) hangReport() error {
	arr := zerolog.Arr()
	var parts []string
	for _, st := range e.status {
		last, inHand := st.Describe()
		arr.Dict(zerolog.Dict().Str("actor", st.Name).Int64("mailbox", st.Pending()).Str("last_message", last).Str("in_hand", inHand))
		if inHand != "" {
			parts = append(parts, fmt.Sprintf("%s is in %s", st.Name, inHand))
		}
	}
	e.log.Error().Str("event", "hang").Dur("quiet", e.cfg.Hang).Array("actors", arr).Msg("no message moved")
	sort.Strings(parts)
	if len(parts) == 0 {
		return fmt.Errorf("pipeline: no message moved for %v (every actor idle, waiting for a message none will send; the hang event in the log lists each one's last message)", e.cfg.Hang)
	}
	return fmt.Errorf("pipeline: no message moved for %v (%s)", e.cfg.Hang, strings.Join(parts, "; "))
}
