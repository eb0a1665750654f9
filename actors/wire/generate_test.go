package wire

import (
	"testing"

	"github.com/pipetrain/pipetrain/internal/prototest"
)

// TestGenerated: wire.pb.go is what go generate makes of wire.proto, so the
// committed code and its source cannot drift apart.
func TestGenerated(t *testing.T) { prototest.Generated(t, "wire.proto", "./actors/wire") }
