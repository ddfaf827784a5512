package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A Setting is one Config field that a kind of run (Pretrained, CalculatorTask) takes in place
// of DefaultConfig's value, unless the user gives it.
type Setting struct {
	Field string // the Config field, dotted as in config.json ("RL.LR")
	Value any    // its value for that kind of run
	Why   string // where the value comes from
}

// apply sets each of settings that given does not report (given: the Config field was set by
// a flag or a configuration file), and returns the ones it set as "Field=value".
func (c *Config) apply(settings []Setting, given func(field string) bool) []string {
	var set []string
	for _, s := range settings {
		if given(s.Field) {
			continue
		}
		// The value goes through JSON, as a configuration file's would: one nested object
		// naming the field, decoded over c, changes that field alone.
		var obj any = s.Value
		parts := strings.Split(s.Field, ".")
		for i := len(parts) - 1; i >= 0; i-- {
			obj = map[string]any{parts[i]: obj}
		}
		raw, err := json.Marshal(obj)
		if err == nil {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields() // a misspelt Field would otherwise set nothing
			err = dec.Decode(c)
		}
		if err != nil {
			panic(fmt.Sprintf("pipeline: setting %s: %v", s.Field, err))
		}
		set = append(set, fmt.Sprintf("%s=%v", s.Field, s.Value))
	}
	return set
}
