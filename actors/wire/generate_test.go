package wire

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGenerated: wire.pb.go is what go generate makes of wire.proto, so the
// committed code and its source cannot drift apart.
func TestGenerated(t *testing.T) {
	for _, tool := range []string{"protoc", "protoc-gen-go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on the PATH (Debian: apt-get install protobuf-compiler protoc-gen-go): not checking wire.pb.go", tool)
		}
	}
	dir := t.TempDir()
	out, err := exec.Command("protoc", "--go_out="+dir, "--go_opt=paths=source_relative", "wire.proto").CombinedOutput()
	if err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "wire.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("wire.pb.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("wire.pb.go differs from what protoc makes of wire.proto: run go generate ./actors/wire")
	}
}
