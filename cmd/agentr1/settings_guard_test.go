package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainRefusesOutOfRangeSettings checks the settings that once slipped through to a late
// failure or a misleading message: a NaN or infinite float, --worlds 0, a negative RL
// checkpoint interval (its SFT twin was already refused). Each is a usage error (exit 2) that
// names the setting.
func TestTrainRefusesOutOfRangeSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sft.lr", "nan"}, "sft.lr"},
		{[]string{"--rl.lr", "NaN"}, "rl.lr"},
		{[]string{"--rl.kl-coef", "+Inf"}, "rl.kl-coef"},
		{[]string{"--demo-noise", "-inf"}, "demo-noise"},
		{[]string{"--worlds", "0"}, "Worlds = 0"},
		{[]string{"--checkpoint-every", "-1"}, "CheckpointEvery = -1"},
		{[]string{"--sft-checkpoint-every", "-1"}, "SFTCheckpointEvery = -1"},
		{[]string{"--eval-every", "-2"}, "EvalEvery = -2"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"train", "--out", t.TempDir()}, tc.args...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("train %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestLoadConfigFileRefusesTrailingText checks that anything after the JSON object of a
// --config file is an error naming the file and line, not silently ignored.
func TestLoadConfigFileRefusesTrailingText(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"garbage.json": "{\"LR\": 0.5}\n\ngarbage",
		"second.json":  "{\"LR\": 0.5}\n\n{\"LR\": 0.7}",
		"bracket.json": "{\"LR\": 0.5}\n\n}",
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(text), 0o644)
		var cfg testCfg
		err := loadConfigFile(path, &cfg)
		if err == nil || !strings.Contains(err.Error(), name+":") {
			t.Errorf("%s: error %v, want one naming the file and line", name, err)
		}
	}
	ok := filepath.Join(dir, "ok.json")
	os.WriteFile(ok, []byte("{\"LR\": 0.5}\n\n  \n"), 0o644)
	var cfg testCfg
	if err := loadConfigFile(ok, &cfg); err != nil || cfg.LR != 0.5 {
		t.Errorf("trailing blanks: %v, LR %v", err, cfg.LR)
	}
}
