package pipeline

import (
	"errors"

	"github.com/pipetrain/pipetrain/pipeline/remote"
)

// startHosts opens this engine's run on its workers (package remote) and
// takes the process's endpoint for its actor system.
func (e *Engine) startHosts() error {
	cfg := e.cfg
	if cfg.RunID == "" {
		return errors.New("pipeline: stages on hosts need Config.RunID")
	}
	stagesOf := make([][]int, len(cfg.Hosts))
	for id, s := range e.plan.Slots {
		stagesOf[s.Host] = append(stagesOf[s.Host], id)
	}
	hs, err := remote.Connect(remote.Config{RunID: cfg.RunID, Hosts: cfg.Hosts, Listen: cfg.Listen, Advertise: cfg.Advertise,
		Token: cfg.Token, TLS: cfg.TLS, Logger: cfg.Logger}, stagesOf, e.graph)
	if err != nil {
		return err
	}
	e.hosts, e.run, e.system, e.root = hs, hs.Run(), hs.System(), hs.System().Root
	return hs.Open(e.plan.HostThreads, e.plan.OneBusy())
}
