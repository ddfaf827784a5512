package trainer

import (
	"strings"
	"testing"
)

// TestDivergenceRule checks the watch on a made-up series: quiet during the warm-up, a value
// 10x the running level flagged and kept out of the average (so the next one is flagged too),
// a small value near 0 not flagged however large its ratio, and the bound at any step.
func TestDivergenceRule(t *testing.T) {
	d := Divergence{Name: "kl", Factor: 10, Alpha: 0.5, Warmup: 3, Floor: 0.05, Bound: 1}
	for i, tc := range []struct {
		x    float64
		want string // "" or a part of the reason
	}{
		{0.001, ""}, {0.002, ""}, {0.003, ""}, // warm-up: EMA = 0.002
		{0.04, ""},                      // 20x the level but below the floor
		{0.5, "above 10 x its running"}, // EMA 0.021: flagged
		{0.5, "above 10 x its running"}, // still flagged: the flagged value stayed out
		{0.1, ""},                       // below 10x 0.021
		{2, "above its bound 1"},
	} {
		got := d.Observe(tc.x)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("value %d (%v): %q, want %q", i, tc.x, got, tc.want)
		}
	}
	if d.N != 5 {
		t.Errorf("%d values averaged, want 5 (the flagged ones left out)", d.N)
	}
}
