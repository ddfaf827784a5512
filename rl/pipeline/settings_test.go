package pipeline

import (
	"strings"
	"testing"
)

// TestSettingsName checks that every setting of Pretrained and CalculatorTask names a Config
// field its value decodes into, and that a misspelt field is refused rather than ignored.
func TestSettingsName(t *testing.T) {
	never := func(string) bool { return false }
	for name, settings := range map[string][]Setting{"Pretrained": Pretrained, "CalculatorTask": CalculatorTask} {
		c := DefaultConfig()
		if got := c.apply(settings, never); len(got) != len(settings) {
			t.Errorf("%s: set %d of %d settings: %q", name, len(got), len(settings), got)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "OperandRw") {
			t.Errorf("a misspelt field: recovered %v, want a panic naming it", r)
		}
	}()
	c := DefaultConfig()
	c.apply([]Setting{{"OperandRw", 0.2, "misspelt"}}, never)
}
