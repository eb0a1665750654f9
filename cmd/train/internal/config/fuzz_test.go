package config

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzParse: the config decoder never panics on any file and --set, an
// accepted config validates, and its resolved form, written back as TOML,
// parses to the same config. Run it with go test -fuzz=FuzzParse (bench/fuzz.sh).
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/full.toml", "testdata/contract.toml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "optimizer.lr=0.1")
		f.Add(data, "model.layers.0.units=7")
	}
	f.Add([]byte("[[model.layers]]\ntype = \"conv2d\"\nchannels = 2\nkernel = 3\n"), "model.layers.0.stride=0")
	f.Add([]byte("[data]\nname = \"csv\"\n"), "data.path=x.csv")
	f.Add([]byte("[pipeline]\nmicro_batches = \"auto\"\n"), "pipeline.hosts=[\"a:1\"]")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		var sets []string
		if set != "" {
			sets = []string{set}
		}
		c, err := Parse("fuzz.toml", data, sets)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("an accepted config does not validate again: %v", err)
		}
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(c.Resolved()); err != nil {
			return // Resolved holds a value TOML cannot write (NaN is refused earlier)
		}
		c2, err := Parse("resolved.toml", buf.Bytes(), nil)
		if err != nil {
			t.Fatalf("the resolved config does not parse: %v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(plain(c2), plain(c)) {
			t.Fatalf("round trip changed the config:\n%s", buf.String())
		}
	})
}
