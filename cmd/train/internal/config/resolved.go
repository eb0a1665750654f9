package config

import (
	"reflect"
	"slices"
)

// Resolved returns the config as nested maps keyed by the TOML names, holding
// only JSON-able values (strings, numbers, booleans, []any and
// map[string]any), for the run_start log event. A layer lists only the keys
// of its type. Encoding it back as TOML and parsing that gives the same
// config. Call it on a validated config: json.Marshal rejects NaN.
func (c *Config) Resolved() map[string]any {
	return resolve(configValue(c)).(map[string]any)
}

func resolve(rv reflect.Value) any {
	if a, ok := rv.Interface().(Auto); ok && a.IsAuto() {
		return "auto"
	}
	switch rv.Kind() {
	case reflect.Struct:
		var keys []string // for a layer of a known type, the keys it takes
		if rv.Type() == layerType {
			keys = layerKeys[rv.Interface().(Layer).Type]
		}
		m := map[string]any{}
		for _, f := range keyFields(rv.Type()) {
			v := rv.FieldByIndex(f.index)
			if keys != nil && !slices.Contains(keys, f.key) || v.Kind() == reflect.Pointer && v.IsNil() {
				continue // not of the layer's type, or an optional key not given
			}
			m[f.key] = resolve(v)
		}
		return m
	case reflect.Pointer:
		return resolve(rv.Elem())
	case reflect.Slice, reflect.Array:
		a := make([]any, rv.Len())
		for i := range a {
			a[i] = resolve(rv.Index(i))
		}
		return a
	}
	return rv.Interface()
}
