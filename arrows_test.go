package pipetrain_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/pipetrain/pipetrain"

// allowed lists, for each package of ours, the packages of ours it may import
// (directly or not): the layers of the stack, each importing only those below
// it (docs/design.md). internal/... is open to all, as internalUsers says.
var allowed = map[string][]string{
	"tensor":    {},
	"ops":       {"tensor"},
	"nn":        {"ops", "tensor"},
	"optim":     {"tensor"},
	"dataset":   {"tensor"},
	"actors":    {"nn", "optim", "ops", "tensor"},
	"pipeline":  {"actors", "nn", "optim", "ops", "tensor"},
	"model":     {"nn", "ops", "tensor"},
	"cmd/train": nil, // all
	"examples":  nil, // all: programs at the top, like cmd/train
}

// TestPackageArrows fails when a lower package imports a higher one.
func TestPackageArrows(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		top := topLevel(name)
		may, known := allowed[top]
		if !known {
			if top != "" && top != "internal" && top != "bench" {
				t.Errorf("package %s is not placed in the stack: add it to allowed", p.ImportPath)
			}
			continue
		}
		checked++
		if may == nil {
			continue // a program at the top may import anything
		}
		for _, d := range p.Deps {
			if !strings.HasPrefix(d, module+"/") {
				continue
			}
			dep := topLevel(strings.TrimPrefix(d, module+"/"))
			if dep == top || dep == "internal" || contains(may, dep) {
				continue
			}
			t.Errorf("%s imports %s: %s may import only %v", p.ImportPath, d, top, may)
		}
	}
	if checked == 0 {
		t.Fatal("no packages were checked")
	}
}

// topLevel maps a package path below the module to its layer: "ops/opstest" is "ops".
func topLevel(p string) string {
	if strings.HasPrefix(p, "cmd/train") {
		return "cmd/train"
	}
	first, _, _ := strings.Cut(p, "/")
	return first
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// internalUsers lists, for each internal package, the packages of ours that
// may import it directly: the GEMM is reached through ops and nn only, so no
// caller above them can bypass the layers' thread budgets.
var internalUsers = map[string][]string{
	"internal/gemm":       {"ops", "nn"},
	"internal/par":        {"internal/gemm", "ops", "nn", "optim", "actors"},
	"internal/vec":        {"internal/gemm", "tensor", "ops", "nn", "optim"},
	"internal/checkpoint": {"cmd/train", "model"},
	"internal/onnx":       {"model"},
}

// TestInternalImports fails when a package imports an internal one it is not
// listed for (tests and commands under bench/ are free to).
func TestInternalImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		for _, d := range p.Imports {
			dep := strings.TrimPrefix(d, module+"/")
			users, ok := internalUsers[dep]
			if !strings.HasPrefix(d, module+"/internal/") {
				continue
			}
			if !ok {
				t.Errorf("%s imports %s, which is not in internalUsers", p.ImportPath, d)
				continue
			}
			seen[dep] = true
			if !contains(users, name) && !strings.HasPrefix(name, "bench/") {
				t.Errorf("%s imports %s directly: only %v may", p.ImportPath, d, users)
			}
		}
	}
	for dep := range internalUsers {
		if !seen[dep] {
			t.Errorf("no package imports %s: drop it from internalUsers", dep)
		}
	}
}
