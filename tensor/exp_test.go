package tensor

import (
	"math"
	"testing"
)

func TestExpF64(t *testing.T) {
	special := []struct {
		name string
		x    float64
		want float64
	}{
		{"zero", 0, 1},
		{"nan", math.NaN(), math.NaN()},
		{"-inf", math.Inf(-1), 0},
		{"+inf", math.Inf(1), math.Inf(1)},
		{"underflow", -800, 0},
		{"overflow", 710, math.Inf(1)},
	}
	for _, c := range special {
		got := expF64(c.x)
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("%s: expF64(%v) = %v, want %v", c.name, c.x, got, c.want)
		}
	}
	// Dense sweep including the subnormal range and the top of the finite range.
	worst, at := 0.0, 0.0
	for x := -744.0; x <= 709.7; x += 0.0137 {
		want := math.Exp(x)
		rel := math.Abs(expF64(x)-want) / want
		if want < 1e-300 { // subnormal results: only absolute precision
			rel = math.Abs(expF64(x)-want) / 1e-300
		}
		if rel > worst {
			worst, at = rel, x
		}
	}
	if worst > 2e-8 {
		t.Errorf("expF64: worst relative error %.3g at x = %v, want < 2e-8", worst, at)
	}
}
