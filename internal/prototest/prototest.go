package prototest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Generated runs protoc on proto, in the test's package folder, as the
// package's //go:generate line does (--go_out=. --go_opt=paths=source_relative),
// and fails unless the result equals the committed .pb.go file beside it.
// It skips, saying so, where protoc or protoc-gen-go is not on the PATH.
func Generated(t *testing.T, proto, pkg string) {
	t.Helper()
	pb := strings.TrimSuffix(proto, ".proto") + ".pb.go"
	for _, tool := range []string{"protoc", "protoc-gen-go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on the PATH (Debian: apt-get install protobuf-compiler protoc-gen-go): not checking %s", tool, pb)
		}
	}
	dir := t.TempDir()
	out, err := exec.Command("protoc", "--go_out="+dir, "--go_opt=paths=source_relative", proto).CombinedOutput()
	if err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, pb))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(pb)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what protoc makes of %s: run go generate %s", pb, proto, pkg)
	}
}
