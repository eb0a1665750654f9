package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// This file moves TOML values (as BurntSushi/toml decodes them into
// map[string]any: string, int64, float64, bool, []any, []map[string]any,
// map[string]any and the datetime types) into a Config, by the toml tags of
// its fields. Doing it here rather than in the toml package lets every error
// name the key by its full path, array elements by index
// ("model.layers[2].unit"), and lets Validate know which keys of a layer were
// given.

var (
	layerType = reflect.TypeFor[Layer]()
	autoType  = reflect.TypeFor[Auto]()
)

// key returns the TOML name of a struct field, or "" for an untagged one.
func key(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if !f.IsExported() || name == "-" {
		return ""
	}
	return name
}

// field returns the index of the field of struct type t named k in TOML.
func field(t reflect.Type, k string) ([]int, bool) {
	for _, f := range keyFields(t) {
		if f.key == k {
			return f.index, true
		}
	}
	return nil, false
}

func configValue(c *Config) reflect.Value { return reflect.ValueOf(c).Elem() }

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// renamed maps keys that old configs may still hold to their new names, so
// that such a config gets told what to write rather than "unknown key".
var renamed = map[string]string{
	"pipeline.nodes": "pipeline.hosts", // a node is a position in the chain, not a machine
}

// unknownKey is the error for path, a key that table, a struct type (nil:
// not a table), does not have; it suggests the key of table nearest to
// path's last part when one is close.
func unknownKey(path string, table reflect.Type) error {
	if to, ok := renamed[path]; ok {
		return fmt.Errorf("%s was renamed %s", path, to)
	}
	if table != nil {
		parent, last := "", path
		if i := strings.LastIndexByte(path, '.'); i >= 0 {
			parent, last = path[:i+1], path[i+1:]
		}
		best, bestD := "", len(last)/3+1 // at most a third of the word wrong
		for _, f := range keyFields(table) {
			if d := editDistance(last, f.key); d < bestD {
				best, bestD = f.key, d
			}
		}
		if best != "" {
			return fmt.Errorf("unknown key %q (did you mean %s%s?)", path, parent, best)
		}
	}
	return fmt.Errorf("unknown key %q", path)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func typeError(path string, v any, want string) error {
	return fmt.Errorf("%s = %s: want %s", path, formatValue(v), want)
}

// decodeTable sets the fields of the struct rv named by the keys of m, in
// sorted key order; the other fields keep their values.
func decodeTable(rv reflect.Value, m map[string]any, path string) error {
	var layer *Layer
	if rv.Type() == layerType {
		layer = rv.Addr().Interface().(*Layer)
		layer.tracked = true
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		i, ok := field(rv.Type(), k)
		if !ok {
			return unknownKey(join(path, k), rv.Type())
		}
		if err := decodeValue(rv.FieldByIndex(i), m[k], join(path, k)); err != nil {
			return err
		}
		if layer != nil {
			layer.mark(k)
		}
	}
	return nil
}

// newElem returns a fresh element for a slice of t: a Layer holds the
// per-layer defaults, anything else its zero value.
func newElem(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	if t == layerType {
		v.Set(reflect.ValueOf(NewLayer("")))
	}
	return v
}

// decodeValue sets rv from the TOML value v found at path. A table merges
// into a struct; an array replaces a slice or array.
func decodeValue(rv reflect.Value, v any, path string) error {
	if rv.Type() == autoType {
		return decodeAuto(rv, v, path)
	}
	switch rv.Kind() {
	case reflect.Pointer: // an optional key: nil until given
		e := reflect.New(rv.Type().Elem())
		if err := decodeValue(e.Elem(), v, path); err != nil {
			return err
		}
		rv.Set(e)
		return nil
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return typeError(path, v, "a table")
		}
		return decodeTable(rv, m, path)
	case reflect.Slice:
		return decodeSlice(rv, v, path)
	case reflect.Array:
		want := fmt.Sprintf("an array of %d %s", rv.Len(), plural(rv.Type().Elem()))
		a, ok := v.([]any)
		if !ok || len(a) != rv.Len() {
			return typeError(path, v, want)
		}
		e := reflect.New(rv.Type()).Elem()
		for i, x := range a {
			if err := decodeValue(e.Index(i), x, index(path, i)); err != nil {
				return err
			}
		}
		rv.Set(e)
		return nil
	}
	if decodeScalar(rv, v, path) {
		return nil
	}
	return typeError(path, v, singular(rv.Type()))
}

// decodeAuto sets an Auto count: "auto", or an integer of at least 1.
func decodeAuto(rv reflect.Value, v any, path string) error {
	switch n := v.(type) {
	case string:
		if n == "auto" {
			rv.SetInt(0)
			return nil
		}
	case int64:
		if n >= 1 && !rv.OverflowInt(n) {
			rv.SetInt(n)
			return nil
		}
		return fmt.Errorf("%s = %d: must be at least 1, or \"auto\"", path, n)
	}
	return typeError(path, v, `an integer or "auto"`)
}

// decodeSlice replaces a slice: of tables for a slice of structs, of
// values otherwise.
func decodeSlice(rv reflect.Value, v any, path string) error {
	et := rv.Type().Elem()
	var items []any
	if et.Kind() == reflect.Struct {
		tables, ok := asTables(v)
		if !ok {
			return typeError(path, v, "an array of tables")
		}
		for _, m := range tables {
			items = append(items, m)
		}
	} else {
		a, ok := v.([]any)
		if !ok {
			return typeError(path, v, "an array of "+plural(et))
		}
		items = a
	}
	s := reflect.Zero(rv.Type())
	for i, x := range items {
		e := newElem(et)
		if err := decodeValue(e, x, index(path, i)); err != nil {
			return err
		}
		s = reflect.Append(s, e)
	}
	rv.Set(s)
	return nil
}

// decodeScalar sets a string, bool or number from v, reporting whether v
// has a fitting type.
func decodeScalar(rv reflect.Value, v any, path string) bool {
	switch rv.Kind() {
	case reflect.String:
		if s, ok := v.(string); ok {
			rv.SetString(s)
			return true
		}
	case reflect.Bool:
		if b, ok := v.(bool); ok {
			rv.SetBool(b)
			return true
		}
	case reflect.Int, reflect.Int64:
		if n, ok := v.(int64); ok && !rv.OverflowInt(n) {
			rv.SetInt(n)
			return true
		}
	case reflect.Uint64:
		if n, ok := v.(int64); ok && n >= 0 {
			rv.SetUint(uint64(n))
			return true
		}
	case reflect.Float64:
		switch n := v.(type) {
		case float64:
			rv.SetFloat(n)
			return true
		case int64:
			rv.SetFloat(float64(n))
			return true
		}
	default:
		panic(fmt.Sprintf("config: field %s of type %s has no TOML decoding", path, rv.Type()))
	}
	return false
}

// asTables returns v as an array of tables: [[x]] tables decode as
// []map[string]any, an inline array of inline tables as []any.
func asTables(v any) ([]map[string]any, bool) {
	switch a := v.(type) {
	case []map[string]any:
		return a, true
	case []any:
		out := make([]map[string]any, len(a))
		for i, x := range a {
			m, ok := x.(map[string]any)
			if !ok {
				return nil, false
			}
			out[i] = m
		}
		return out, true
	}
	return nil, false
}

// singular names what a value of type t must be, for error messages.
func singular(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Uint64:
		return "an integer >= 0"
	case reflect.Float64:
		return "a number"
	case reflect.Struct:
		return "a table"
	}
	return "a " + t.String()
}

func plural(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "strings"
	case reflect.Bool:
		return "booleans"
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "integers"
	case reflect.Float64:
		return "numbers"
	case reflect.Struct:
		return "tables"
	}
	return t.String() + "s"
}

// set applies one --set KEY=VALUE to c. KEY is a dotted path of TOML keys
// and array indices ("model.layers.0.units"); VALUE is a TOML value, or, if
// it does not parse as one (or the key holds a string), the text itself.
func (c *Config) set(s string) error {
	k, text, ok := strings.Cut(s, "=")
	if !ok {
		return errors.New("want KEY=VALUE")
	}
	k = strings.TrimSpace(k)
	if k == "" {
		return errors.New("empty key")
	}
	rv, path := configValue(c), ""
	var (
		layer    *Layer // the layer whose field rv is, if it is one
		layerKey string
		elem     bool // rv is an array element
	)
	segs := strings.Split(k, ".")
	for i, seg := range segs {
		if seg == "" {
			return fmt.Errorf("key %q has an empty part", k)
		}
		layer, elem = nil, false
		switch rv.Kind() {
		case reflect.Struct:
			f, ok := field(rv.Type(), seg)
			if !ok {
				return unknownKey(join(path, seg), rv.Type())
			}
			if rv.Type() == layerType {
				layer, layerKey = rv.Addr().Interface().(*Layer), seg
			}
			rv, path = rv.FieldByIndex(f), join(path, seg)
		case reflect.Slice, reflect.Array:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || strings.TrimLeft(seg, "0123456789") != "" {
				return fmt.Errorf("unknown key %q: %s is an array; address an element by its index, e.g. %s.0", join(path, seg), path, path)
			}
			if n >= rv.Len() {
				return fmt.Errorf("index %d out of range: %s has %d elements", n, path, rv.Len())
			}
			rv, path, elem = rv.Index(n), index(path, n), true
		default:
			return unknownKey(join(path, strings.Join(segs[i:], ".")), nil)
		}
	}
	v, parsed := parseValue(text)
	if _, isString := v.(string); rv.Kind() == reflect.String && parsed && !isString {
		v = text // --set log.dir=2024 means the directory "2024"
	}
	if elem && rv.Kind() == reflect.Struct {
		// An array element is replaced, not merged into.
		e := newElem(rv.Type())
		if err := decodeValue(e, v, path); err != nil {
			return err
		}
		rv.Set(e)
		return nil
	}
	if err := decodeValue(rv, v, path); err != nil {
		return err
	}
	if layer != nil {
		layer.tracked = true
		layer.mark(layerKey)
	}
	return nil
}

// parseValue parses s as a TOML value; if it is not one, it returns s itself
// and false.
func parseValue(s string) (any, bool) {
	var m map[string]any
	if _, err := toml.Decode("v = "+s, &m); err != nil || len(m) != 1 {
		return s, false
	}
	v, ok := m["v"]
	if !ok {
		return s, false
	}
	return v, true
}

// formatValue writes a TOML value back in TOML's syntax, for error messages.
func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case float64:
		return formatFloat(v)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = formatValue(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []map[string]any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = formatValue(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := make([]string, 0, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, k+" = "+formatValue(v[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
