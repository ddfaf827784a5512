package main

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// explainDefault is the output of explain at its defaults (--all-tokens changes only what is
// printed), run once for the tests that read it: it takes a few seconds.
var explainDefault struct {
	once      sync.Once
	out, errs string
	code      int
}

// explainDefaultOutput returns explain's output at its defaults, failing t if it did not run.
func explainDefaultOutput(t *testing.T) string {
	t.Helper()
	explainDefault.once.Do(func() {
		var out, errOut bytes.Buffer
		explainDefault.code = run([]string{"explain", "--all-tokens"}, &out, &errOut)
		explainDefault.out, explainDefault.errs = out.String(), errOut.String()
	})
	if explainDefault.code != 0 {
		t.Fatalf("explain: exit %d: %s", explainDefault.code, explainDefault.errs)
	}
	return explainDefault.out
}

// TestExplain runs explain at its defaults (GRPO, and PPO with its critic) and checks the
// table it prints: a header, the group line, one block per trajectory, and on every token the
// step trained on figures that agree with each other as printed: ratio = e^(new − old), a
// clipped token's gradient 0 and its ratio outside the clip band, an unclipped token's
// gradient of the sign of −A. (rl/trainer's TestTraceStep checks the figures against the rl
// functions.)
func TestExplain(t *testing.T) {
	for _, algo := range []string{"grpo", "ppo"} {
		var text string
		if algo == "grpo" {
			text = explainDefaultOutput(t)
		} else {
			var out, errOut bytes.Buffer
			if code := run([]string{"explain", "--algo", algo, "--all-tokens"}, &out, &errOut); code != 0 {
				t.Fatalf("%s: exit %d: %s", algo, code, errOut.String())
			}
			text = out.String()
		}
		if !strings.HasPrefix(text, "one "+strings.ToUpper(algo)+" step") || strings.Count(text, "\n== group ") != 1 ||
			strings.Count(text, "\n-- trajectory ") != 4 || !strings.Contains(text, "\nstep: loss ") {
			t.Fatalf("%s: the output lacks its header, group, four trajectories or step line:\n%s", algo, text)
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

// TestExplainDefaultRewardsSearch checks that the step explain prints at its defaults is one
// a reader learns from: in its group a trajectory searches, is paid a process reward on the
// token that closes a search, answers the gold answer and is paid the outcome reward 1 on its
// last token, with a positive advantage and a gradient that raises its tokens' log-probs,
// while another trajectory has a negative advantage. It also checks that the check fails on
// the step of a barely warm-started policy, which calls no tool well or answers nothing.
func TestExplainDefaultRewardsSearch(t *testing.T) {
	if err := checkRewardsSearch(explainDefaultOutput(t)); err != nil {
		t.Errorf("the default explain step: %v\n%s", err, explainDefaultOutput(t))
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"explain", "--sft-steps", "20"}, &out, &errOut); code != 0 {
		t.Fatalf("explain --sft-steps 20: exit %d: %s", code, errOut.String())
	}
	if err := checkRewardsSearch(out.String()); err == nil {
		t.Errorf("the check passes the step of a policy warm-started for 20 steps: it cannot tell\n%s", out.String())
	}
}

// explainTrajectoryRe matches a trajectory's line of explain's GRPO output.
var explainTrajectoryRe = regexp.MustCompile(`^-- trajectory \d+/\d+ \(batch row \d+\): reward \S+ = outcome (\S+) \+ process (\S+), advantage (\S+), (\d+) turn\(s\), (?:answer "(.*)"|no answer);`)

// explainTrajectory is what checkRewardsSearch reads of one printed trajectory.
type explainTrajectory struct {
	outcome, process, advantage float64
	turns                       int
	answer                      string
	closesRewarded              bool    // an agent "</tool_call>" row has a reward in (0, 1): a process reward
	lastReward                  float64 // the reward of the last agent row
	pushedUp, pushedDown        int     // trained unclipped agent rows whose dL/dlogp is < 0 (raises log π) or > 0
}

// checkRewardsSearch returns an error unless a group of explain's GRPO output (at most one
// group is read) has a trajectory that searched, was paid a process reward and the outcome
// reward 1 for the gold answer, with a positive advantage and every trained token's gradient
// raising its log-prob, and another trajectory with a negative advantage.
func checkRewardsSearch(text string) error {
	gold := ""
	if m := regexp.MustCompile(`\(gold answer "(.*)"\)`).FindStringSubmatch(text); m != nil {
		gold = m[1]
	}
	var trajs []*explainTrajectory
	for _, line := range strings.Split(text, "\n") {
		if m := explainTrajectoryRe.FindStringSubmatch(line); m != nil {
			tr := &explainTrajectory{answer: m[5]}
			tr.outcome, _ = strconv.ParseFloat(m[1], 64)
			tr.process, _ = strconv.ParseFloat(m[2], 64)
			tr.advantage, _ = strconv.ParseFloat(m[3], 64)
			tr.turns, _ = strconv.Atoi(m[4])
			trajs = append(trajs, tr)
			continue
		}
		f := strings.Fields(line)
		if len(trajs) == 0 || len(f) < 12 || f[1] != "agent" {
			continue
		}
		tr := trajs[len(trajs)-1]
		reward, err := strconv.ParseFloat(f[len(f)-7], 64)
		if err != nil {
			return fmt.Errorf("%q: reward: %v", line, err)
		}
		tr.lastReward = reward
		if f[2] == `"</tool_call>"` && reward > 0 && reward < 1 {
			tr.closesRewarded = true
		}
		if grad, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil && f[len(f)-2] == "-" {
			switch {
			case grad < 0:
				tr.pushedUp++
			case grad > 0:
				tr.pushedDown++
			}
		}
	}
	if len(trajs) == 0 || gold == "" {
		return fmt.Errorf("no trajectory or gold answer printed")
	}
	rewarded, negative := false, false
	for _, tr := range trajs {
		negative = negative || tr.advantage < 0
		rewarded = rewarded || (tr.outcome == 1 && tr.answer == gold && tr.turns >= 2 && tr.process > 0 &&
			tr.closesRewarded && tr.lastReward == 1 && tr.advantage > 0 && tr.pushedUp > 0 && tr.pushedDown == 0)
	}
	switch {
	case !rewarded:
		return fmt.Errorf("no trajectory searches, is paid a process reward on a </tool_call>, answers %q with the outcome reward 1 on its last token, and has a positive advantage raising its log-probs", gold)
	case !negative:
		return fmt.Errorf("no trajectory has a negative advantage")
	}
	return nil
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
		{[]string{"--demos", "0"}, "--demos must be in [1, 79]"},
		{[]string{"--prompts", "13"}, "--prompts 13: the step's questions are demonstrated ones"},
		{[]string{"--question", "13"}, "--question 13: want 0 or a demonstrated question's number, from 1 to 12"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"explain"}, c.args...), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("explain %v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut.String(), c.want)
		}
	}
}
