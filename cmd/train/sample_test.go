package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// accentedText is text of one- and two-byte characters, so that its bits
// per byte and per character differ.
var accentedText = strings.Repeat("Grüße aus Köln, señor; où est la gare? ", 40)

// TestTextBitsPerByte checks the eval events' and `train eval`'s
// bits_per_byte against bits_per_char and the test split's characters and
// bytes.
func TestTextBitsPerByte(t *testing.T) {
	dir := t.TempDir()
	path := writeText(t, filepath.Join(dir, "text.txt"), accentedText)
	ev := trainIn(t, dir, textConfig(path, "chars", 0))
	// the test split: the last 10% of the characters; its targets all but its first
	runes := []rune(accentedText)
	test := string(runes[int(float64(len(runes))*0.9):])
	windows := (len([]rune(test)) - 1) / 8
	targets := string([]rune(test)[1 : 1+windows*8])
	ratio := float64(len([]rune(targets))) / float64(len(targets))
	bpc, bpb := ev["bits_per_char"].(float64), ev["bits_per_byte"].(float64)
	if want := bpc * ratio; math.Abs(bpb-want) > 1e-12*want || ratio == 1 {
		t.Fatalf("eval event: bits_per_byte %v, want bits_per_char %v × %d characters / %d bytes = %v",
			bpb, bpc, len([]rune(targets)), len(targets), want)
	}
	r := runSub("eval", "--checkpoint", filepath.Join(dir, "checkpoints"), "--set", "log.dir="+filepath.Join(dir, "evallogs"))
	if r.code != 0 {
		t.Fatalf("eval: exit %d: %s", r.code, r.stderr)
	}
	var res evalResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("eval printed %q: %v", r.stdout, err)
	}
	if res.BitsPerB == nil || res.BitsPerChr == nil || *res.BitsPerB != *res.BitsPerChr*ratio && math.Abs(*res.BitsPerB-*res.BitsPerChr*ratio) > 1e-12 {
		t.Fatalf("eval printed %s: bits_per_byte should be bits_per_char × %v", r.stdout, ratio)
	}
}

// TestSample draws from a trained text model: the prompt then the tokens,
// the same for the same seed and options, another text for another top_p,
// and exit 2 for a bad --top_p.
func TestSample(t *testing.T) {
	dir := t.TempDir()
	path := writeText(t, filepath.Join(dir, "text.txt"), accentedText)
	trainIn(t, dir, textConfig(path, "chars", 0))
	ck := filepath.Join(dir, "checkpoints")
	sample := func(args ...string) string {
		t.Helper()
		r := runSub(append([]string{"sample", "--checkpoint", ck, "--prompt", "Grü", "--tokens", "40", "--temperature", "1.5"}, args...)...)
		if r.code != 0 {
			t.Fatalf("sample %v: exit %d: %s", args, r.code, r.stderr)
		}
		return r.stdout
	}
	a, b := sample("--top_p", "0.5"), sample("--top_p", "0.5")
	if a != b {
		t.Fatalf("the same seed gave %q and %q", a, b)
	}
	if !strings.HasPrefix(a, "Grü") || !strings.HasSuffix(a, "\n") || len([]rune(a)) != 3+40+1 {
		t.Fatalf("sample wrote %q: want the prompt, 40 characters and a newline", a)
	}
	if c := sample("--top_p", "1"); c == a {
		t.Fatalf("top_p 0.5 and 1 at temperature 1.5 drew the same 40 characters %q", a)
	}
	for _, p := range []string{"0", "1.5", "-1"} {
		r := runSub("sample", "--checkpoint", ck, "--top_p", p)
		if r.code != 2 || !strings.Contains(r.stderr, "--top_p") {
			t.Errorf("--top_p %s: exit %d, stderr %q; want 2 naming --top_p", p, r.code, r.stderr)
		}
	}
}
