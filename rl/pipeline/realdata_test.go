package pipeline

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// flatJSON is cfg as config.json writes it, flattened to dotted field paths ("RL.LR").
func flatJSON(t *testing.T, cfg Config) map[string]any {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	flat := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				walk(prefix+k+".", x)
			}
			return
		}
		flat[strings.TrimSuffix(prefix, ".")] = v
	}
	walk("", tree)
	return flat
}

// TestForPretrained checks that a run on real questions gets every Pretrained setting the user
// did not give, and nothing else changes: a misspelt field would set nothing, and this fails.
// A given field keeps its value, and a run on the generated world is left as it is.
func TestForPretrained(t *testing.T) {
	world := DefaultConfig()
	real := DefaultConfig()
	real.Data, real.InitModel = "hotpotqa", "/models/qwen"
	before := flatJSON(t, real)

	cfg := real
	set := cfg.ForPretrained(func(string) bool { return false })
	after := flatJSON(t, cfg)
	want := map[string]any{}
	for _, p := range Pretrained {
		v, _ := json.Marshal(p.Value)
		var x any
		json.Unmarshal(v, &x)
		want[p.Field] = x
	}
	for field, v := range after {
		w, pretrained := want[field]
		switch {
		case pretrained && !reflect.DeepEqual(v, w):
			t.Errorf("%s = %v after ForPretrained, want %v", field, v, w)
		case !pretrained && !reflect.DeepEqual(v, before[field]):
			t.Errorf("%s changed from %v to %v; it is not a Pretrained setting", field, before[field], v)
		}
	}
	for field := range want {
		if _, ok := after[field]; !ok {
			t.Errorf("Pretrained names %s, which Config does not have", field)
		}
		if reflect.DeepEqual(before[field], want[field]) {
			t.Errorf("%s is %v by default already: the entry changes nothing", field, want[field])
		}
	}
	if len(set) != len(Pretrained) || set[0] != fmt.Sprintf("%s=%v", Pretrained[0].Field, Pretrained[0].Value) {
		t.Errorf("ForPretrained returned %q, want every setting as Field=value", set)
	}

	cfg = real
	cfg.RL.LR, cfg.RequireThink = 2e-5, true
	set = cfg.ForPretrained(func(f string) bool { return f == "RL.LR" || f == "RequireThink" })
	if cfg.RL.LR != 2e-5 || !cfg.RequireThink || cfg.RL.MaxLen != 4096 {
		t.Errorf("given RL.LR and RequireThink: LR %v, RequireThink %v, MaxLen %d; want the given two kept and MaxLen 4096", cfg.RL.LR, cfg.RequireThink, cfg.RL.MaxLen)
	}
	if slices.ContainsFunc(set, func(s string) bool { return strings.HasPrefix(s, "RL.LR=") || strings.HasPrefix(s, "RequireThink=") }) {
		t.Errorf("ForPretrained reports the given settings as its own: %q", set)
	}

	cfg = world
	if set := cfg.ForPretrained(func(string) bool { return false }); set != nil || !reflect.DeepEqual(cfg, world) {
		t.Errorf("the generated world's run changed (%q)", set)
	}
	if err := real.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg = real
	cfg.ForPretrained(func(string) bool { return false })
	if err := cfg.Validate(); err != nil {
		t.Errorf("the Pretrained settings do not validate: %v", err)
	}
}
