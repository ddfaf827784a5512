package main

import (
	"fmt"
	"strings"
	"time"

	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

// phaseTimes adds up where a training process spent its time, from the step records it logs,
// so that the closing summary can say it: a run's time moves with the machine, and only the
// phases' times tell what a faster or slower machine changes.
type phaseTimes struct {
	sftSteps int
	sft      float64 // seconds in SFT steps

	rlSteps                                  int
	rollout, old, ref, critic, update, rlAll float64 // seconds, summed over the RL steps
}

// add counts one record of the run's logger; records other than step metrics are ignored.
func (p *phaseTimes) add(rec any) {
	switch v := rec.(type) {
	case pipeline.SFTMetrics:
		p.sftSteps++
		p.sft += float64(v.TimeTotal)
	case trainer.StepMetrics:
		p.rlSteps++
		p.rollout += float64(v.TimeRollout)
		p.old += float64(v.TimeOld)
		p.ref += float64(v.TimeRef)
		p.critic += float64(v.TimeCritic)
		p.update += float64(v.TimeUpdate)
		p.rlAll += float64(v.TimeTotal)
	}
}

// line is the summary's account of a process that ran for total with algorithm algo, e.g.
//
//	time 18m15s: SFT 8m17s (2400 steps, 4.8 a second); grpo 9m29s (240 steps, 2.4 s each:
//	rollout 4m41s, old log-probs 20s, update 4m28s); setup, evaluations and baselines 29s
//
// (one line). Old log-probs, a reference policy and a critic are left out when they took
// under 1% of the RL time.
func (p *phaseTimes) line(total time.Duration, algo string) string {
	sec := func(s float64) string { return formatDuration(time.Duration(s * float64(time.Second))) }
	var parts []string
	if p.sftSteps > 0 {
		parts = append(parts, fmt.Sprintf("SFT %s (%s, %.1f a second)", sec(p.sft), steps(p.sftSteps), float64(p.sftSteps)/max(p.sft, 1e-9)))
	}
	if p.rlSteps > 0 {
		// The rollout and the update always; the optional parts when they took a measurable
		// share (a reference policy or critic that is off costs microseconds).
		split := []string{"rollout " + sec(p.rollout)}
		for _, part := range []struct {
			name string
			s    float64
		}{{"old log-probs", p.old}, {"reference", p.ref}, {"critic", p.critic}} {
			if part.s >= 0.01*p.rlAll {
				split = append(split, part.name+" "+sec(part.s))
			}
		}
		split = append(split, "update "+sec(p.update))
		each := p.rlAll / float64(p.rlSteps)
		prec := 1
		if each < 1 {
			prec = 2
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s, %.*f s each: %s)", algo, sec(p.rlAll), steps(p.rlSteps), prec, each, strings.Join(split, ", ")))
	}
	rest := total.Seconds() - p.sft - p.rlAll
	parts = append(parts, "setup, evaluations and baselines "+sec(max(rest, 0)))
	return fmt.Sprintf("time %s: %s", formatDuration(total), strings.Join(parts, "; "))
}

// steps is "1 step" or "n steps".
func steps(n int) string {
	if n == 1 {
		return "1 step"
	}
	return fmt.Sprintf("%d steps", n)
}
