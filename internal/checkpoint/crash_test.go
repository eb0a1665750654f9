package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/tensor"
)

// The environment of the helper process that TestSaveSurvivesKill starts.
const (
	helperRootEnv  = "PIPETRAIN_CHECKPOINT_HELPER_ROOT"  // where to save
	helperIterEnv  = "PIPETRAIN_CHECKPOINT_HELPER_ITER"  // the first iteration
	helperPruneEnv = "PIPETRAIN_CHECKPOINT_HELPER_PRUNE" // if set, step = iteration and Prune to keep this many after each Save
)

// bigTensors returns about 50 MB of tensors whose every bit follows from iter:
// 32 MiB of float32 and 16 MiB of float64, any bit pattern (NaNs included).
func bigTensors(iter int) (model, optim map[string]*tensor.Tensor) {
	rng := rand.New(rand.NewPCG(uint64(iter), 0x5eed))
	w := make([]float32, 2048*4096)
	for i := 0; i < len(w); i += 2 {
		u := rng.Uint64()
		w[i], w[i+1] = math.Float32frombits(uint32(u)), math.Float32frombits(uint32(u>>32))
	}
	b := make([]float32, 2048)
	for i := range b {
		b[i] = float32(iter) + float32(i)
	}
	m := make([]float64, 1024*2048)
	for i := range m {
		m[i] = math.Float64frombits(rng.Uint64())
	}
	model = map[string]*tensor.Tensor{
		"0.weight": tensor.Wrap32(w, 2048, 4096),
		"0.bias":   tensor.Wrap32(b, 2048),
	}
	optim = map[string]*tensor.Tensor{
		"0.weight.m": tensor.Wrap64(m, 1024, 2048),
		"0.bias.m":   tensor.Full(tensor.Float64, float64(iter)),
	}
	return model, optim
}

// crashStep is the step iteration iter saves as: steps 1 and 2 alternate, so that
// most saves replace an existing checkpoint.
func crashStep(iter int) int { return 1 + iter%2 }

func crashMeta(iter int) Meta {
	meta := testMeta(crashStep(iter))
	meta.Extra = map[string]any{"iter": iter}
	return meta
}

// TestHelperProcess is not a test: TestSaveSurvivesKill runs the test binary
// with this test alone, as a child process that saves big checkpoints in a loop
// until it is killed.
func TestHelperProcess(t *testing.T) {
	root := os.Getenv(helperRootEnv)
	if root == "" {
		t.Skip("the child process of TestSaveSurvivesKill")
	}
	iter, err := strconv.Atoi(os.Getenv(helperIterEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	keep, _ := strconv.Atoi(os.Getenv(helperPruneEnv))
	// Stop on our own if the parent is gone without killing us.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); iter++ {
		model, optim := bigTensors(iter)
		meta := crashMeta(iter)
		if keep > 0 {
			meta.Step = iter
		}
		if _, err := Save(root, meta, model, optim); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		if keep > 0 {
			if _, err := Prune(root, keep); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(4)
			}
		}
	}
	os.Exit(0)
}

// TestSaveSurvivesKill kills a process with SIGKILL while it saves a 50 MB
// checkpoint, at different moments, and checks that Latest still finds a complete
// checkpoint that Load reads back bit for bit, and that no step- directory is
// ever partial. (A kill tests atomicity; the fsyncs, which this cannot observe,
// extend it to power loss.)
func TestSaveSurvivesKill(t *testing.T) {
	switch runtime.GOOS {
	case "js", "wasip1":
		t.Skipf("no subprocesses on %s", runtime.GOOS)
	}
	root := t.TempDir()
	model, optim := bigTensors(0)
	start := time.Now()
	mustSave(t, root, crashMeta(0), model, optim)
	took := time.Since(start)

	// For each round: kill the child this far into a Save (in units of the Save
	// above), counting from when its Nth Save created its .tmp- directory. The
	// first Save of a round always replaces a checkpoint; later ones too, mostly.
	rounds := []struct {
		nth      int
		fraction float64
	}{{1, 0}, {2, 0.1}, {1, 0.25}, {2, 0.5}, {1, 0.75}, {2, 0.95}, {1, 1.2}}
	if testing.Short() {
		rounds = rounds[1:4]
	}
	t.Logf("a %d MB Save takes %v here", 50, took.Round(time.Millisecond))
	for r, round := range rounds {
		seen := map[string]bool{}
		for _, name := range strayDirs(t, root) {
			seen[name] = true
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperRootEnv+"="+root, helperIterEnv+"="+strconv.Itoa(1000*(r+1)))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		newTmp := 0
		deadline := time.Now().Add(20 * time.Second)
		for newTmp < round.nth {
			for _, name := range strayDirs(t, root) {
				if strings.HasPrefix(name, tmpPrefix) && !seen[name] {
					seen[name] = true
					newTmp++
				}
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: no new .tmp- directory within 20s; child output:\n%s", r, out.String())
			}
			time.Sleep(200 * time.Microsecond)
		}
		delay := time.Duration(round.fraction * float64(took))
		time.Sleep(delay)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if cmd.ProcessState.Success() || out.Len() > 0 {
			t.Fatalf("round %d: child exited by itself (%v); output:\n%s", r, err, out.String())
		}
		t.Logf("round %d: killed %v into Save #%d; left behind %v", r, delay.Round(time.Microsecond), round.nth, strayDirs(t, root))

		dir, ok, err := Latest(root)
		if err != nil || !ok {
			t.Fatalf("round %d: Latest = %q, %v, %v; want a checkpoint", r, dir, ok, err)
		}
		checkCrashCheckpoint(t, dir)
		// No step- directory may be partial, not only the latest.
		steps, err := listSteps(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			if s.dir != dir {
				checkCrashCheckpoint(t, s.dir)
			}
		}
	}

	// The next Save clears what the kills left behind.
	mustSave(t, root, testMeta(3), testModel(), testOptim())
	if stray := strayDirs(t, root); len(stray) > 0 {
		t.Errorf("after a Save, root still holds %v", stray)
	}
	names := dirNames(t, root)
	if !slices.Contains(names, "step-00000001") || !slices.Contains(names, "step-00000003") {
		t.Errorf("root holds %v, want step 1 (saved first), 3 (saved last) and perhaps 2", names)
	}
	for _, name := range names {
		if name != "step-00000003" {
			checkCrashCheckpoint(t, filepath.Join(root, name))
		}
	}
}

// strayDirs returns the names of root's .tmp- and .old- entries.
func strayDirs(t *testing.T, root string) []string {
	t.Helper()
	var stray []string
	for _, name := range dirNames(t, root) {
		if strings.HasPrefix(name, tmpPrefix) || strings.HasPrefix(name, oldPrefix) {
			stray = append(stray, name)
		}
	}
	return stray
}

// checkCrashCheckpoint loads dir and checks that it holds exactly what its
// iteration saved.
func checkCrashCheckpoint(t *testing.T, dir string) {
	t.Helper()
	meta, model, optim, err := Load(dir)
	if err != nil {
		t.Fatalf("Load(%s): %v", filepath.Base(dir), err)
	}
	n, _ := meta.Extra["iter"].(json.Number)
	iter, err := strconv.Atoi(string(n))
	if err != nil {
		t.Fatalf("%s: extra.iter = %v", dir, meta.Extra["iter"])
	}
	if meta.Step != crashStep(iter) && meta.Step != iter { // iter: the pruning helper's steps
		t.Errorf("%s: step %d, but iteration %d saves step %d", dir, meta.Step, iter, crashStep(iter))
	}
	wantModel, wantOptim := bigTensors(iter)
	if err := sameTensors(model, wantModel); err != nil {
		t.Errorf("%s (iteration %d) model: %v", dir, iter, err)
	}
	if err := sameTensors(optim, wantOptim); err != nil {
		t.Errorf("%s (iteration %d) optimizer: %v", dir, iter, err)
	}
}

// TestPruneSurvivesKill kills a process that saves a checkpoint and prunes
// the folder to the newest three after each, at moments spread over a
// save and a prune, and checks that every step- directory left is whole,
// that no more than one save's worth is over the three, and that the next
// Save and Prune leave exactly three.
func TestPruneSurvivesKill(t *testing.T) {
	switch runtime.GOOS {
	case "js", "wasip1":
		t.Skipf("no subprocesses on %s", runtime.GOOS)
	}
	const keep = 3
	root := t.TempDir()
	delays := []time.Duration{0, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}
	if testing.Short() {
		delays = delays[:3]
	}
	for r, delay := range delays {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperRootEnv+"="+root, helperIterEnv+"="+strconv.Itoa(1000*(r+1)), helperPruneEnv+"="+strconv.Itoa(keep))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// wait for the round's fourth save, so that prunes have run, then a little more
		deadline := time.Now().Add(20 * time.Second)
		for {
			steps, _ := listSteps(root)
			if len(steps) > 0 && steps[0].step >= 1000*(r+1)+3 {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: no fourth save within 20s; child output:\n%s", r, out.String())
			}
			time.Sleep(200 * time.Microsecond)
		}
		time.Sleep(delay)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if out.Len() > 0 {
			t.Fatalf("round %d: child output:\n%s", r, out.String())
		}
		steps, err := listSteps(root)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed %v after the fourth save: %d step directories, strays %v", r, delay, len(steps), strayDirs(t, root))
		if len(steps) > keep+1 {
			t.Errorf("round %d: %d step directories, want at most %d (%d kept, one saved before its prune)", r, len(steps), keep+1, keep)
		}
		for _, s := range steps {
			checkCrashCheckpoint(t, s.dir)
		}
	}
	mustSave(t, root, testMeta(1_000_000), testModel(), testOptim())
	if _, err := Prune(root, keep); err != nil {
		t.Fatal(err)
	}
	if steps, _ := listSteps(root); len(steps) != keep {
		t.Errorf("after a Save and a Prune: %d step directories, want %d", len(steps), keep)
	}
	if stray := strayDirs(t, root); len(stray) > 0 {
		t.Errorf("after a Save and a Prune, root still holds %v", stray)
	}
}
