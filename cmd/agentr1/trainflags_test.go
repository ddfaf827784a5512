package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"agentr1/rl/pipeline"
)

// TestTrainFlagDocs checks the help table against the flags train declares: every flag has a
// text and a known section, every entry of the table is a flag, and every field train leaves
// unbound is one bindConfig would otherwise declare.
func TestTrainFlagDocs(t *testing.T) {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	declareTrainFlags(fs, new(trainArgs))
	declared := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		declared[f.Name] = true
		doc, ok := trainFlagDocs[f.Name]
		switch {
		case !ok || strings.TrimSpace(doc.text) == "":
			t.Errorf("flag --%s has no text in trainFlagDocs", f.Name)
		case !slices.Contains(trainFlagGroups, doc.group):
			t.Errorf("flag --%s: section %q is not one of %v", f.Name, doc.group, trainFlagGroups)
		case f.Usage != doc.text:
			t.Errorf("flag --%s: usage %q is not the table's text", f.Name, f.Usage)
		case strings.Contains(doc.text, "go doc"):
			t.Errorf("flag --%s: text %q points to go doc instead of saying what it does", f.Name, doc.text)
		}
	})
	for name := range trainFlagDocs {
		if !declared[name] {
			t.Errorf("trainFlagDocs has a text for --%s, which train does not declare", name)
		}
	}
	all := flag.NewFlagSet("all", flag.ContinueOnError)
	cfg := pipeline.DefaultConfig()
	every := bindConfig(all, &cfg, "", trainUsage, nil)
	for name := range trainFixedFields {
		if !slices.Contains(every, name) {
			t.Errorf("trainFixedFields names %q, which is no setting of pipeline.Config", name)
		}
		if declared[name] {
			t.Errorf("trainFixedFields names %q, but train declares it", name)
		}
	}
}

// TestTrainFlagsTakeTheirDefaults checks every train flag accepts the value its help prints as
// the default, so a setting whose printed form is not its input form (an enumeration printed
// by name but parsed as an integer) cannot hide behind a working default.
func TestTrainFlagsTakeTheirDefaults(t *testing.T) {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	declareTrainFlags(fs, new(trainArgs))
	fs.VisitAll(func(f *flag.Flag) {
		if err := f.Value.Set(f.DefValue); err != nil {
			t.Errorf("--%s %q (its printed default): %v", f.Name, f.DefValue, err)
		}
	})
}

// TestExperimentFlagsHaveTexts checks that experiment, which binds the same settings, says what
// each of its flags does too.
func TestExperimentFlagsHaveTexts(t *testing.T) {
	fs := flag.NewFlagSet("experiment", flag.ContinueOnError)
	declareExperimentFlags(fs, &experimentArgs{cfg: pipeline.DefaultConfig()})
	fs.VisitAll(func(f *flag.Flag) {
		if strings.TrimSpace(f.Usage) == "" || experimentFlagGroup(f.Name) == "" {
			t.Errorf("experiment flag --%s: usage %q, section %q", f.Name, f.Usage, experimentFlagGroup(f.Name))
		}
	})
}

// TestHelpTrainGroups checks the sections of `help train` come in order, each flag listed once
// with its text and default.
func TestHelpTrainGroups(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"help", "train"}, &out, io.Discard); code != 0 {
		t.Fatalf("help train: exit %d", code)
	}
	text := out.String()
	last := -1
	for _, g := range trainFlagGroups {
		i := strings.Index(text, "\n"+g+" flags:\n")
		if i < 0 || i < last {
			t.Fatalf("help train: section %q missing or out of order\n%s", g, text)
		}
		last = i
	}
	if strings.Contains(text, "other flags:") {
		t.Errorf("help train lists flags in no section\n%s", text)
	}
	for _, want := range []string{
		"  -rl.lr float\n    \tpeak learning rate of the policy (paper: 1e-6 for a 3B model) (default 0.0003)\n",
		"  -require-think\n    \tthe answer format requires <think>...</think> in every turn (default true)\n",
	} {
		if strings.Count(text, want) != 1 {
			t.Errorf("help train should hold once:\n%s", want)
		}
	}
}

// TestBindConfigTextFields checks a field that reads and writes itself as text is a flag taking
// its text form.
func TestBindConfigTextFields(t *testing.T) {
	var cfg struct{ Level textLevel }
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bindConfig(fs, &cfg, "", func(string) string { return "level" }, nil)
	if err := fs.Parse([]string{"--level", "high"}); err != nil || cfg.Level != 2 {
		t.Fatalf("--level high: %v, level %d", err, cfg.Level)
	}
	if got := fs.Lookup("level").Value.String(); got != "high" {
		t.Errorf("level flag prints %q, want high", got)
	}
	if err := fs.Parse([]string{"--level", "loud"}); err == nil || !strings.Contains(err.Error(), "loud") {
		t.Errorf("--level loud: error %v should name the value", err)
	}
}

// textLevel is an enumeration with a text form, as the trainer's typed settings are.
type textLevel int

func (l textLevel) MarshalText() ([]byte, error) {
	return []byte([]string{"off", "low", "high"}[l]), nil
}

func (l *textLevel) UnmarshalText(b []byte) error {
	i := slices.Index([]string{"off", "low", "high"}, string(b))
	if i < 0 {
		return fmt.Errorf("unknown level %q", b)
	}
	*l = textLevel(i)
	return nil
}
