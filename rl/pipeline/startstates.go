package pipeline

import (
	"context"
	"fmt"

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/env/world"
	"agentr1/rl/rollout"
	"agentr1/rl/trainer"
)

// A policy that never reaches the last step of a task is never rewarded for taking it well:
// on the calculator task the warm start rarely holds both numbers, and when it does it mostly
// calculates on the wrong ones, so RL's sparse reward never pays for the calculation and the
// turn dies out (RESULTS section 6). Start states put part of RL's episodes right before that
// step: the scripted agent, patient and without mistakes, plays an RL question up to its last
// tool call, and the episode begins there, the policy writing the rest. This is the reverse
// curriculum of Salimans & Chen (2018, "Learning Montezuma's Revenge from a Single
// Demonstration"), with the state fixed at the last call, or, for a share of the states, one
// step later: after the last tool's result, before the answer turn, where the policy has only
// to answer from what it holds (on the calculator task, to copy the calculator's result). The
// state is part of the prompt: the policy is trained on its own turns only.

// StartProblems plays each task with a patient scripted agent that makes no mistakes (in an
// environment of qcfg over tools, its choices drawn from seed) and returns, for each task it
// answers right with at least two tool calls, the problem that begins before its last tool
// call, or, for the share atAnswer of the problems (spread evenly over them), before its
// answer turn. When answerTool is set, that share is of the problems whose last tool call is
// to answerTool, and no other begins at its answer turn. The prompt is the episode so far
// (tokenised as world.Demo.Trajectory does, piece by piece as a rollout sees it), and each new
// episode replays the agent's turns before continuing. It stops at max problems; states whose
// prompt is longer than maxPrompt tokens are left out.
func StartProblems(ctx context.Context, w *world.World, tasks []world.Task, tools []env.Tool, qcfg qa.Config,
	enc rollout.Encoder, maxPrompt, max int, atAnswer float64, answerTool string, seed uint64) ([]trainer.Problem, error) {
	if max <= 0 {
		return nil, nil
	}
	demos, _, err := world.Run(ctx, w, qcfg, tools, tasks, world.Habits{}, seed)
	if err != nil {
		return nil, fmt.Errorf("start states: %w", err)
	}
	var out []trainer.Problem
	eligible := 0 // the problems so far that may begin at the answer turn
	for _, d := range demos {
		if d.Score.EM != 1 {
			continue
		}
		tr := d.Trajectory(enc.Encode, false)
		last := -1 // the last turn that calls a tool
		for k, t := range tr.Turns {
			if len(t.ToolCalls) > 0 {
				last = k
			}
		}
		if last < 1 {
			continue
		}
		// The state moves on when the count of eligible states times atAnswer crosses a whole
		// number: the share is then exact to one state and spread evenly over the set.
		at := last
		canAnswer := answerTool == "" || lastToolIs(d.Turns[last].Action, answerTool)
		if n := float64(eligible); canAnswer && int((n+1)*atAnswer) > int(n*atAnswer) {
			at = len(tr.Turns) - 1 // the answer turn, after every tool call
		}
		prompt := tr.Before(at)
		if len(prompt) > maxPrompt {
			continue
		}
		if canAnswer {
			eligible++
		}
		actions := make([]string, at)
		for k, t := range d.Turns[:at] {
			actions[k] = t.Action
		}
		out = append(out, qaProblem(d.Task.Question, prompt, qcfg, tools, actions))
		if len(out) == max {
			break
		}
	}
	return out, nil
}

// lastToolIs reports whether the last well-formed tool call in action is to the tool named.
func lastToolIs(action, name string) bool {
	calls, _ := env.ParseToolCalls(action, 0)
	return len(calls) > 0 && calls[len(calls)-1].Name == name
}

// startCount is how many start states make up share of an RL set that holds n questions
// besides them: share·(n+s) = s.
func startCount(share float64, n int) int {
	if share <= 0 {
		return 0
	}
	return int(share/(1-share)*float64(n) + 0.5)
}
