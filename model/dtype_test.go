package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSaveAsRoundTrip saves a model as F32 and as BF16 and loads each back: F32 exactly,
// BF16 as RoundWeights rounds; config.json names the dtype, WeightsDType reads it back, and a
// "dtype" key (newer transformers) says the same.
func TestSaveAsRoundTrip(t *testing.T) {
	for _, tied := range []bool{true, false} {
		m, err := New(tinyConfig(tied), 3)
		if err != nil {
			t.Fatal(err)
		}
		m.Config.Extra = map[string]json.RawMessage{"dtype": json.RawMessage(`"float32"`)}
		for _, dt := range []DType{F32, BF16} {
			dir := filepath.Join(t.TempDir(), dt.String())
			if err := m.SaveAs(dir, dt); err != nil {
				t.Fatal(err)
			}
			got, err := Load(dir)
			if err != nil {
				t.Fatalf("tied %v %s: %v", tied, dt, err)
			}
			want := m.Clone()
			want.RoundWeights(dt)
			sameWeights(t, fmt.Sprintf("tied %v %s", tied, dt), got, want)
			if stored, err := WeightsDType(dir); err != nil || stored != dt {
				t.Errorf("tied %v %s: WeightsDType = %s (%v)", tied, dt, stored, err)
			}
			raw, _ := os.ReadFile(filepath.Join(dir, "config.json"))
			name := `"` + dt.torchName() + `"`
			if !strings.Contains(string(raw), `"torch_dtype": `+name) || !strings.Contains(string(raw), `"dtype": `+name) {
				t.Errorf("tied %v %s: config.json does not name %s in torch_dtype and dtype:\n%s", tied, dt, name, raw)
			}
		}
	}
	if err := (&Model{}).SaveAs(t.TempDir(), "F16"); err == nil {
		t.Error("SaveAs F16: no error, want one (only F32 and BF16 are written)")
	}
	for _, s := range []string{"bf16", "BFloat16", "f32", "float32"} {
		if _, err := ParseDType(s); err != nil {
			t.Errorf("ParseDType(%q): %v", s, err)
		}
	}
	if _, err := ParseDType("f16"); err == nil || !strings.Contains(err.Error(), "f32 or bf16") {
		t.Errorf("ParseDType(f16): %v, want an error naming f32 and bf16", err)
	}
}
