package nn

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// DefaultSpec returns the defaults of every key that has one, whatever the
// type: init xavier_uniform, shards 1, alpha 0.01, p 0.1, eps 1e-5,
// momentum 0.1. Defaults that depend on other keys (a stride) are set by
// CheckSpec.
func DefaultSpec() Spec {
	return Spec{Init: XavierUniform, Shards: 1, Alpha: 0.01, P: 0.1, Eps: 1e-5, Momentum: 0.1}
}

// KeyError is a spec's bad key: Key, its value (nil when the key is
// missing) and why.
type KeyError struct {
	Key   string
	Value any
	Why   string
}

func (e *KeyError) Error() string {
	switch v := e.Value.(type) {
	case nil:
		return e.Key + ": " + e.Why
	case string, Init:
		return fmt.Sprintf("%s = %q: %s", e.Key, v, e.Why)
	}
	return fmt.Sprintf("%s = %v: %s", e.Key, e.Value, e.Why)
}

// CheckSpec fills in the defaults of s that depend on its other keys and
// checks every key of its type: present when required, in range. given
// reports whether a key was set by the user (a key missing from a config
// file holds its default, or zero). The error is a *KeyError.
func CheckSpec(s *Spec, given func(key string) bool) error {
	t, ok := lookup(s.Type)
	if !ok {
		return &KeyError{Key: "type", Value: s.Type, Why: "want one of " + strings.Join(LayerTypes(), ", ")}
	}
	c := checker{s: s, given: given, typ: s.Type}
	if t.check != nil {
		t.check(&c)
	}
	if t.shards {
		units, key := s.Units, "units"
		if s.Type != "linear" {
			units, key = s.Channels, "channels"
		}
		if c.atLeast("shards", s.Shards, 1); c.err == nil && s.Shards > units {
			c.fail("shards", s.Shards, fmt.Sprintf("more than %s = %d", key, units))
		}
	}
	if c.err != nil {
		return c.err
	}
	return nil
}

// checker keeps the first bad key of a spec.
type checker struct {
	s     *Spec
	given func(string) bool
	typ   string
	err   *KeyError
}

func (c *checker) fail(key string, value any, why string) {
	if c.err == nil {
		c.err = &KeyError{Key: key, Value: value, Why: why}
	}
}

// required fails when an integer key was neither given nor set.
func (c *checker) required(key string, v int) {
	if v == 0 && !c.given(key) {
		c.fail(key, nil, "required for "+article(c.typ)+" "+c.typ+" layer")
	}
}

// article is "an" before a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func (c *checker) atLeast(key string, v, lo int) {
	if v < lo {
		c.fail(key, v, fmt.Sprintf("must be at least %d", lo))
	}
}

// float fails unless v is finite and ok(v), saying want.
func (c *checker) float(key string, v float64, ok func(float64) bool, want string) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		c.fail(key, v, "must be a finite number")
	case !ok(v):
		c.fail(key, v, want)
	}
}

func (c *checker) init() {
	if !slices.Contains(Inits, c.s.Init) {
		names := make([]string, len(Inits))
		for i, in := range Inits {
			names[i] = string(in)
		}
		c.fail("init", string(c.s.Init), "want one of "+strings.Join(names, ", "))
	}
}

// defaultInt sets *v to def unless the key was given.
func (c *checker) defaultInt(key string, v *int, def int) {
	if !c.given(key) {
		*v = def
	}
}
