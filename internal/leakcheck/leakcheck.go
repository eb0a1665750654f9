package leakcheck

import (
	"fmt"
	"os"
	"time"

	"go.uber.org/goleak"
)

// After returns code, the tests' exit status, or 1 when they passed but
// left goroutines running 3 s on, which it prints: protoactor's attempt
// to reach a lost peer (a close tells its watchers there) ends two
// seconds after it began.
func After(code int) int {
	if code != 0 {
		return code
	}
	err := goleak.Find()
	for end := time.Now().Add(3 * time.Second); err != nil && time.Now().Before(end); err = goleak.Find() {
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		return 1
	}
	return code
}
