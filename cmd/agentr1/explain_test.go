package main

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestExplain runs explain on a barely warm-started policy (seed 6 gives a group whose
// rewards differ) and checks the table it prints:
// a header, the group line, one block per trajectory, and on every token the step trained on
// figures that agree with each other as printed: ratio = e^(new − old), a clipped token's
// gradient 0 and its ratio outside the clip band, an unclipped token's gradient of the sign
// of −A. (rl/trainer's TestTraceStep checks the figures against the rl functions.)
func TestExplain(t *testing.T) {
	for _, algo := range []string{"grpo", "ppo"} {
		var out, errOut bytes.Buffer
		args := []string{"explain", "--algo", algo, "--sft-steps", "20", "--n", "3", "--max-turn-tokens", "24", "--workers", "2", "--all-tokens", "--lr", "3e-3", "--seed", "6"}
		if code := run(args, &out, &errOut); code != 0 {
			t.Fatalf("%s: exit %d: %s", algo, code, errOut.String())
		}
		text := out.String()
		if !strings.HasPrefix(text, "one "+strings.ToUpper(algo)+" step") || strings.Count(text, "\n== group ") != 1 ||
			strings.Count(text, "\n-- trajectory ") != 3 || !strings.Contains(text, "\nstep: loss ") {
			t.Fatalf("%s: the output lacks its header, group, three trajectories or step line:\n%s", algo, text)
		}
		trained, clipped := 0, 0
		for _, line := range strings.Split(text, "\n") {
			f := strings.Fields(line)
			if len(f) < 10 || f[1] != "agent" || f[len(f)-1] == "-" {
				continue
			}
			num := func(i int) float64 {
				x, err := strconv.ParseFloat(f[len(f)+i], 64)
				if err != nil {
					t.Fatalf("%s: %q: field %d: %v", algo, line, i, err)
				}
				return x
			}
			aCol := -6 // A sits before old logp; PPO adds V and R after it
			if algo == "ppo" {
				aCol = -8
			}
			a, old, nw, ratio, grad := num(aCol), num(-5), num(-4), num(-3), num(-1)
			clip := f[len(f)-2]
			trained++
			if want := math.Exp(nw - old); math.Abs(ratio-want) > 2e-4*want+1e-4 {
				t.Errorf("%s: %q: ratio %v, e^(new - old) = %v", algo, line, ratio, want)
			}
			switch clip {
			case "clip", "dual":
				clipped++
				if grad != 0 || (ratio > 0.8 && ratio < 1.28 && clip == "clip") {
					t.Errorf("%s: %q: clipped with ratio %v, gradient %v", algo, line, ratio, grad)
				}
			case "-":
				if a != 0 && (grad == 0 || math.Signbit(grad) != math.Signbit(-a)) {
					t.Errorf("%s: %q: unclipped gradient %v for advantage %v", algo, line, grad, a)
				}
			default:
				t.Errorf("%s: %q: clip column %q", algo, line, clip)
			}
		}
		if trained == 0 || clipped == 0 {
			t.Fatalf("%s: %d trained agent tokens printed, %d clipped: the test cannot tell\n%s", algo, trained, clipped, text)
		}
		t.Logf("%s: %d trained agent tokens, %d clipped", algo, trained, clipped)
	}
}

// TestExplainRefuses checks that explain refuses bad settings with a usage error naming them,
// before building anything.
func TestExplainRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--algo", "sarsa"}, `--algo "sarsa": want one of`},
		{[]string{"--obs-tokens", "-1"}, "--obs-tokens must be at least 0"},
		{[]string{"--epochs", "0"}, "Epochs = 0"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"explain"}, c.args...), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("explain %v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut.String(), c.want)
		}
	}
}
