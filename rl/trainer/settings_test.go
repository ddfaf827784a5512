package trainer

import (
	"encoding/json"
	"strings"
	"testing"

	"agentr1/rl"
)

// TestSettingNames checks every typed setting's names: each constant parses to itself and
// writes its name, and an unknown name is refused with the accepted ones listed.
func TestSettingNames(t *testing.T) {
	type setting struct {
		name   string
		values []string
		parse  func(string) (string, error)
		want   string // a word of the refusal that lists the accepted names
	}
	settings := []setting{
		{"KLPlacement", []string{"auto", "reward", "loss", "none"},
			func(s string) (string, error) { v, err := ParseKLPlacement(s); return v.String(), err }, "reward"},
		{"OldLogProbSource", []string{"recompute", "sampled"},
			func(s string) (string, error) { v, err := ParseOldLogProbSource(s); return v.String(), err }, "recompute"},
		{"LRDecay", []string{"cosine", "linear", "constant"},
			func(s string) (string, error) { v, err := ParseLRDecay(s); return v.String(), err }, "linear"},
		{"Algorithm", []string{"ppo", "grpo", "drgrpo", "reinforce++", "reinforce++-baseline", "rloo", "remax"},
			func(s string) (string, error) { v, err := ParseAlgorithm(s); return v.String(), err }, "rloo"},
	}
	for _, st := range settings {
		for _, v := range st.values {
			if got, err := st.parse(v); err != nil || got != v {
				t.Errorf("%s: parse(%q) = %q, %v; want %q", st.name, v, got, err, v)
			}
		}
		if _, err := st.parse("bogus"); err == nil || !strings.Contains(err.Error(), st.want) || !strings.Contains(err.Error(), "bogus") {
			t.Errorf("%s: parse(bogus) error %v, want one naming the value and the accepted names", st.name, err)
		}
	}
	if p, err := ParseKLPlacement(""); err != nil || p != KLAuto {
		t.Errorf(`ParseKLPlacement("") = %q, %v; want auto (what "" meant before the type)`, p, err)
	}
}

// TestRLConfigJSON checks that RLConfig's typed settings read and write config.json's names:
// the defaults write the strings they always wrote, verl's other spellings read as the same
// values, and a misspelt name is refused where the JSON is read.
func TestRLConfigJSON(t *testing.T) {
	b, err := json.Marshal(DefaultRLConfig(GRPO))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{`"Algorithm":"grpo"`, `"OldLogProbs":"sampled"`, `"AggMode":"token-mean"`,
		`"KLPlacement":"auto"`, `"KLEstimator":"k3"`, `"Decay":"cosine"`} {
		if !strings.Contains(string(b), kv) {
			t.Errorf("DefaultRLConfig's JSON lacks %s: %s", kv, b)
		}
	}
	var c RLConfig
	legacy := `{"Algorithm":"reinforce_plus_plus","KLEstimator":"low_var_kl","KLPlacement":"","AggMode":"seq-mean-token-sum-norm","OldLogProbs":"recompute","Decay":"linear"}`
	if err := json.Unmarshal([]byte(legacy), &c); err != nil {
		t.Fatalf("legacy spellings: %v", err)
	}
	if c.Algorithm != ReinforcePP || c.KLEstimator != rl.KLK3 || c.KLPlacement != KLAuto ||
		c.AggMode != rl.SeqMeanTokenSumNorm || c.OldLogProbs != OldLogProbsRecompute || c.Decay != DecayLinear {
		t.Errorf("legacy spellings read as %q %v %q %q %q %q", c.Algorithm, c.KLEstimator, c.KLPlacement, c.AggMode, c.OldLogProbs, c.Decay)
	}
	for _, bad := range []struct{ json, want string }{
		{`{"Decay":"exp"}`, "cosine"},
		{`{"KLEstimator":"k9"}`, "low_var_kl"},
		{`{"KLEstimator":"full"}`, "full"},
		{`{"KLPlacement":"both"}`, "reward"},
		{`{"OldLogProbs":"cached"}`, "sampled"},
		{`{"AggMode":"mean"}`, "token-mean"},
		{`{"Algorithm":"dpo"}`, "grpo"},
	} {
		c := DefaultRLConfig(GRPO)
		if err := json.Unmarshal([]byte(bad.json), &c); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want one listing %q", bad.json, err, bad.want)
		}
	}
}

// TestValidateNamesTheField checks that a bad typed setting set in code is refused by
// Validate with the field's name and the accepted values.
func TestValidateNamesTheField(t *testing.T) {
	for _, bad := range []struct {
		field string
		edit  func(*RLConfig)
		want  string
	}{
		{"OldLogProbs", func(c *RLConfig) { c.OldLogProbs = "cached" }, "recompute"},
		{"KLPlacement", func(c *RLConfig) { c.KLPlacement = "both" }, "reward"},
		{"Decay", func(c *RLConfig) { c.Decay = "exp" }, "cosine"},
		{"KLEstimator", func(c *RLConfig) { c.KLEstimator = rl.KLEstimator(9) }, "k3"},
		{"AggMode", func(c *RLConfig) { c.AggMode = "mean" }, "token-mean"},
		{"Algorithm", func(c *RLConfig) { c.Algorithm = "dpo" }, "grpo"},
	} {
		c := DefaultRLConfig(GRPO)
		bad.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), bad.field) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: Validate error %v, want one naming the field and %q", bad.field, err, bad.want)
		}
	}
}
