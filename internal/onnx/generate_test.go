package onnx

import (
	"testing"

	"github.com/pipetrain/pipetrain/internal/prototest"
)

// TestGenerated: onnx.pb.go is what go generate makes of onnx.proto, so the
// committed code and its source cannot drift apart.
func TestGenerated(t *testing.T) { prototest.Generated(t, "onnx.proto", "./internal/onnx") }
