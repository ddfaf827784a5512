package calc

import (
	"context"
	"strings"
	"testing"
)

func TestEval(t *testing.T) {
	for _, c := range []struct {
		expr, want string
	}{
		{"1 + 2", "3"},
		{"2 + 3 * 4", "14"},
		{"(2 + 3) * 4", "20"},
		{"10 - 4 - 3", "3"}, // left-associative
		{"100 / 10 / 5", "2"},
		{"2 ^ 3 ^ 2", "512"}, // right-associative
		{"-2 ^ 2", "-4"},     // unary minus binds looser than ^
		{"(-2) ^ 2", "4"},
		{"2 ^ -1", "0.5"},
		{"--3", "3"},
		{"7 % 3", "1"},
		{"-7 % 3", "-1"}, // the remainder takes the dividend's sign (math.Mod)
		{"7.5 % 2", "1.5"},
		{"1 / 3", "0.333333"},
		{"2 / 3", "0.666667"},
		{"0.1 + 0.2", "0.3"},
		{".5 * 4", "2"},
		{"1994 - 1921", "73"},
		{"2 ^ 40", "1099511627776"},
		{"999999999999999 + 1", "1000000000000000"},
		{"-0 * 5", "0"},
		{" \t(\n1)\r", "1"},
		{"0.0000004", "0"},
		{"0.0000006", "0.000001"},
		{"0.0000005", "0"}, // its binary value is just below the tie: rounded down
	} {
		x, err := Eval(c.expr)
		if err != nil {
			t.Errorf("Eval(%q): %v", c.expr, err)
			continue
		}
		if got := Format(x); got != c.want {
			t.Errorf("Eval(%q) = %s, want %s", c.expr, got, c.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	for _, c := range []struct {
		expr, want string
	}{
		{"", "empty expression"},
		{"   ", "empty expression"},
		{"1 / 0", "division by zero"},
		{"1 / (2 - 2)", "division by zero"},
		{"5 % 0", "remainder of a division by zero"},
		{"0 ^ -1", "zero to a negative power"},
		{"(-8) ^ 0.5", "(-8)^0.5 is not a real number"},
		{"1 +", "at byte 3: expression ends where a number or ( was expected"},
		{"(1 + 2", "at byte 6: missing )"},
		{"1 + 2)", "at byte 5: unexpected ')'"},
		{"2 x 3", "at byte 2: unexpected 'x'"},
		{"3 × 4", "at byte 2: unexpected '×'"},
		{"−2 + 1", "at byte 0: unexpected '−' where a number or ( was expected"},
		{"1e5", "at byte 1: unexpected 'e'"},
		{"3.", "at byte 0: number \"3.\" needs digits after the point"},
		{"abc", "at byte 0: unexpected 'a' where a number or ( was expected"},
		{"1 ++ 2", "at byte 3: unexpected '+' where a number"},
		{"2000000000000000", "number 2000000000000000 is larger than 1e+15"},
		{"10^15 * 10", "result of 1000000000000000 * 10 is larger than 1e+15"},
		{"10 ^ 400", "is larger than 1e+15"},
		{strings.Repeat("1+", 100) + "1", "expression of 201 bytes, at most 200"},
		{strings.Repeat("(", 21) + "1" + strings.Repeat(")", 21), "nested more than 20 levels deep"},
		{strings.Repeat("-", 21) + "1", "nested more than 20 levels deep"},
		{strings.Repeat("1+", 51) + "1", "more than 50 operations"},
	} {
		_, err := Eval(c.expr)
		if err == nil {
			t.Errorf("Eval(%q): no error, want %q", c.expr, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Eval(%q): error %q, want it to contain %q", c.expr, err, c.want)
		}
	}
}

func TestLimitsAreExact(t *testing.T) {
	// The limits themselves are allowed: one more is refused (TestEvalErrors).
	for name, expr := range map[string]string{
		"length":     "1" + strings.Repeat(" ", 199),
		"depth":      strings.Repeat("(", 20) + "1" + strings.Repeat(")", 20),
		"operations": strings.Repeat("1+", 50) + "1",
		"magnitude":  "1000000000000000",
	} {
		if _, err := Eval(expr); err != nil {
			t.Errorf("%s: Eval(%q): %v", name, expr, err)
		}
	}
}

func TestTool(t *testing.T) {
	var tool Tool
	if err := tool.Parameters().Check(); err != nil {
		t.Fatalf("schema: %v", err)
	}
	out, err := tool.Call(context.Background(), map[string]any{"expression": "(1994 - 1921) * 2"})
	if err != nil || out != "146" {
		t.Errorf("Call = %q, %v; want 146", out, err)
	}
	if _, err := tool.Call(context.Background(), map[string]any{"expression": "1/0"}); err == nil || err.Error() != "division by zero" {
		t.Errorf("Call(1/0) error = %v, want division by zero", err)
	}
}
