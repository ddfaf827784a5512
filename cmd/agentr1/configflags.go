package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// bindConfig declares one flag for every settable field of the struct that cfg points to,
// recursively, named by the field path in kebab case: RL.LR becomes "rl.lr", TrainWorld.People
// "train-world.people". Every setting of a run is therefore a flag, without a hand-kept list
// that could drift from the config struct. usage gives each flag's help text by name (a flag
// it has no text for gets none: the command's test catches that). A field tagged `flag:"-"`
// or named in skip is not bound (the command sets it another way). A flag's default is the
// field's current value, so bind after loading defaults (and a --config file). It returns the
// flag names it declared.
func bindConfig(fs *flag.FlagSet, cfg any, prefix string, usage func(name string) string, skip map[string]string) []string {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("bindConfig: want a pointer to a struct, got %T", cfg))
	}
	b := &configBinder{fs: fs, usage: usage, skip: skip}
	b.bindStruct(v.Elem(), prefix)
	return b.names
}

// configBinder carries bindConfig's settings through the recursion over nested structs.
type configBinder struct {
	fs    *flag.FlagSet
	usage func(name string) string
	skip  map[string]string
	names []string // flags declared so far
}

func (b *configBinder) bindStruct(v reflect.Value, prefix string) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := prefix + kebab(f.Name)
		if _, skipped := b.skip[name]; skipped || !f.IsExported() || f.Tag.Get("flag") == "-" {
			continue // `flag:"-"`: a setting the command declares itself (train's --data, --model)
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Struct && !parsesText(fv) {
			b.bindStruct(fv, name+".")
			continue
		}
		fl := &fieldFlag{v: fv}
		if !fl.supported() {
			continue
		}
		b.fs.Var(fl, name, b.usage(name))
		b.names = append(b.names, name)
	}
}

// fieldFlagName is the flag bindConfig declares for a Config field path: "RL.MaxLen" is
// "rl.max-len".
func fieldFlagName(field string) string {
	parts := strings.Split(field, ".")
	for i, p := range parts {
		parts[i] = kebab(p)
	}
	return strings.Join(parts, ".")
}

// kebab writes a Go field name in kebab case: "MaxLen" is "max-len", "RL" is "rl".
func kebab(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || (nextLower && unicode.IsUpper(r[i-1])) {
				b.WriteByte('-')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// fieldFlag is a flag.Value writing straight into one struct field. A field whose type parses
// its own text (encoding.TextUnmarshaler: the typed settings, such as rl.KLEstimator) is set
// through it, so a misspelt name is refused with the accepted ones.
type fieldFlag struct{ v reflect.Value }

// parsesText reports whether the field v parses its own text (encoding.TextUnmarshaler).
func parsesText(v reflect.Value) bool {
	_, ok := v.Addr().Interface().(encoding.TextUnmarshaler)
	return ok
}

// text returns the field as a TextUnmarshaler, or nil when its type is not one.
func (f *fieldFlag) text() encoding.TextUnmarshaler {
	if parsesText(f.v) {
		return f.v.Addr().Interface().(encoding.TextUnmarshaler)
	}
	return nil
}

func (f *fieldFlag) supported() bool {
	if f.text() != nil {
		return true
	}
	switch f.v.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64, reflect.String:
		return true
	}
	return false
}

// typeName names the kind of value the flag takes, for help: "int", "float", "string", ...
func (f *fieldFlag) typeName() string {
	if f.text() != nil {
		return "string"
	}
	switch f.v.Kind() {
	case reflect.Bool:
		return ""
	case reflect.Int, reflect.Int64:
		return "int"
	case reflect.Uint64:
		return "uint"
	case reflect.Float64:
		return "float"
	}
	return "string"
}

func (f *fieldFlag) String() string {
	if f == nil || !f.v.IsValid() {
		return ""
	}
	if m, ok := f.v.Addr().Interface().(encoding.TextMarshaler); ok {
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(f.v.Interface()) // a typed setting prints its name through String
}

func (f *fieldFlag) IsBoolFlag() bool { return f.text() == nil && f.v.Kind() == reflect.Bool }

func (f *fieldFlag) Set(s string) error {
	if u := f.text(); u != nil {
		return u.UnmarshalText([]byte(s))
	}
	switch f.v.Kind() {
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		f.v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("want an integer")
		}
		f.v.SetInt(n)
	case reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("want a non-negative integer")
		}
		f.v.SetUint(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("want a number")
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("want a finite number, got %s", s)
		}
		f.v.SetFloat(x)
	case reflect.String:
		f.v.SetString(s)
	}
	return nil
}

// loadConfigFile decodes the JSON object in path over cfg (fields absent from the file keep
// their values). Unknown fields are an error naming the file, so a typo is not silently ignored,
// and so is anything after the object (a second object, a stray bracket from a bad edit).
// Errors name the file (and the line of a syntax error); the caller names the flag that gave it.
func loadConfigFile(path string, cfg any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err // names the path already
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		var se *json.SyntaxError
		if ok := asSyntax(err, &se); ok {
			line := 1 + bytes.Count(raw[:se.Offset], []byte("\n"))
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		off := dec.InputOffset()
		line := 1 + bytes.Count(raw[:off], []byte("\n"))
		return fmt.Errorf("%s:%d: unexpected text after the JSON object", path, line)
	}
	return nil
}

// configFileSets reports whether the JSON object in path (a --config file, read before by
// loadConfigFile) gives the setting field, a path of field names such as "TrainWorld.Numeric",
// matched as encoding/json matches them (case-insensitively).
func configFileSets(path, field string) bool {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, name := range strings.Split(field, ".") {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return false
		}
		found := false
		for k, v := range obj {
			if strings.EqualFold(k, name) {
				raw, found = v, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func asSyntax(err error, target **json.SyntaxError) bool {
	se, ok := err.(*json.SyntaxError)
	if ok {
		*target = se
	}
	return ok
}

// preScan returns the value of flag name in args (as -name V, --name V, -name=V or --name=V)
// without parsing the rest, for flags such as --config that decide the other flags' defaults.
func preScan(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		trimmed := strings.TrimLeft(a, "-")
		if len(trimmed) == len(a) || len(a)-len(trimmed) > 2 {
			continue
		}
		if k, v, ok := strings.Cut(trimmed, "="); ok && k == name {
			return v, true
		}
		if trimmed == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}
