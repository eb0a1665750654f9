package config

import (
	"reflect"
	"strings"

	"github.com/pipetrain/pipetrain/nn"
)

// specFields maps each key of a Layer to its field in nn.Spec, whose json
// names are the same keys: nn's table of layer types owns what each key
// means, and a Layer only carries it from TOML.
var specFields = func() map[string]int {
	st := reflect.TypeFor[nn.Spec]()
	m := map[string]int{}
	for j := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(j).Tag.Get("json"), ",")
		m[name] = j
	}
	for i := range layerType.NumField() {
		if k := key(layerType.Field(i)); k != "" {
			if _, ok := m[k]; !ok {
				panic("config: nn.Spec has no key " + k)
			}
		}
	}
	return m
}()

// Spec returns the layer as nn's spec.
func (l Layer) Spec() nn.Spec {
	var s nn.Spec
	sv, lv := reflect.ValueOf(&s).Elem(), reflect.ValueOf(l)
	for i := range layerType.NumField() {
		if k := key(layerType.Field(i)); k != "" {
			f := sv.Field(specFields[k])
			f.Set(lv.Field(i).Convert(f.Type()))
		}
	}
	return s
}

// setSpec sets the layer's keys from s.
func (l *Layer) setSpec(s nn.Spec) {
	sv, lv := reflect.ValueOf(s), reflect.ValueOf(l).Elem()
	for i := range layerType.NumField() {
		if k := key(layerType.Field(i)); k != "" {
			f := lv.Field(i)
			f.Set(sv.Field(specFields[k]).Convert(f.Type()))
		}
	}
}
