package config

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
)

// keyField is a key of a TOML table and the index of its field in the
// struct, through embedded structs (a Layer's keys are its nn.Spec's).
type keyField struct {
	key   string
	index []int
}

// keyFields lists the keys of struct type t in field order, embedded
// structs' keys in their place.
func keyFields(t reflect.Type) []keyField {
	var out []keyField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for _, k := range keyFields(f.Type) {
				out = append(out, keyField{k.key, append([]int{i}, k.index...)})
			}
			continue
		}
		if k := key(f); k != "" {
			out = append(out, keyField{k, []int{i}})
		}
	}
	return out
}

// hashKeys are the keys a layer had when checkpoints began to record a hash
// of their config, in the order its JSON gave them then.
var hashKeys = []string{"type", "units", "init", "shards", "alpha", "p", "approximate", "channels", "kernel", "stride", "padding", "eps", "momentum"}

// MarshalJSON gives the layer's every key in the form checkpoints hash
// (hashKeys, then any later key that is set), so that a checkpoint written
// before a key existed still resumes.
func (l Layer) MarshalJSON() ([]byte, error) {
	rv := reflect.ValueOf(l)
	fields := keyFields(layerType)
	var b bytes.Buffer
	b.WriteByte('{')
	write := func(k string, v reflect.Value) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v.Interface())
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
		return err
	}
	for _, k := range hashKeys {
		i, _ := field(layerType, k)
		if err := write(k, rv.FieldByIndex(i)); err != nil {
			return nil, err
		}
	}
	for _, f := range fields {
		if v := rv.FieldByIndex(f.index); !slices.Contains(hashKeys, f.key) && !v.IsZero() {
			if err := write(f.key, v); err != nil {
				return nil, err
			}
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
