package calc

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzEval checks that no expression makes Eval panic, that an error is a non-empty message,
// and that an accepted expression is within the limits and its value is finite, at most
// MaxMagnitude, formatted as a plain decimal (digits, at most one point, at most Decimals
// places, an optional leading minus) that Eval reads back to the same answer. Run longer with
// `go test -run '^$' -fuzz FuzzEval ./env/calc/`.
func FuzzEval(f *testing.F) {
	for _, s := range []string{
		"1 + 2", "(1994 - 1921) * 2", "-2 ^ 2", "2 ^ 3 ^ 2", "7 % -3", "1 / 3", ".5", "3.",
		"1 / 0", "0 ^ -1", "(-8) ^ 0.5", "10 ^ 400", "((1)", "1)", "--1", "1e5", "",
		strings.Repeat("(", 25) + "1" + strings.Repeat(")", 25), strings.Repeat("-", 30) + "1",
		strings.Repeat("1+", 60) + "1", "999999999999999.9999999 * 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		x, err := Eval(expr)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("Eval(%q): empty error", expr)
			}
			return
		}
		if len(expr) > MaxLength {
			t.Fatalf("Eval(%q): accepted %d bytes, limit %d", expr, len(expr), MaxLength)
		}
		if !(x >= -MaxMagnitude && x <= MaxMagnitude) {
			t.Fatalf("Eval(%q) = %v, outside ±%g", expr, x, MaxMagnitude)
		}
		s := Format(x)
		digits := strings.TrimPrefix(s, "-")
		if intPart, frac, ok := strings.Cut(digits, "."); ok && (len(frac) == 0 || len(frac) > Decimals || strings.HasSuffix(frac, "0") || intPart == "") {
			t.Fatalf("Format(%v) = %q: bad decimal part", x, s)
		}
		if strings.Trim(digits, "0123456789.") != "" || s == "-0" {
			t.Fatalf("Format(%v) = %q: not a plain decimal", x, s)
		}
		y, err := Eval(s)
		if err != nil || Format(y) != s {
			t.Fatalf("Eval(Format(%v) = %q) = %v, %v; want %q back", x, s, y, err, s)
		}
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			t.Fatalf("Format(%v) = %q: %v", x, s, err)
		}
	})
}
