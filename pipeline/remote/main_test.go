package remote

import (
	"os"
	"testing"

	"github.com/pipetrain/pipetrain/internal/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.After(m.Run())) }
