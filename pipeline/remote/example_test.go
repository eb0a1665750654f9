package remote_test

import (
	"fmt"

	"github.com/pipetrain/pipetrain/pipeline/remote"
)

func Example() {
	// a worker reachable beyond this machine takes only coordinators that
	// present its token: it will not listen there without one
	_, err := remote.NewWorker(remote.WorkerConfig{Listen: "0.0.0.0:0"})
	fmt.Println(err)
	// Output:
	// remote: a worker listens beyond loopback (0.0.0.0:0) only with a token
}
