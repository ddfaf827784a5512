package main

import (
	"math"
	"strings"

	"agentr1/report"
	"agentr1/rl/trainer"
	"agentr1/tokenizer"
)

// samplesPerStep is how many trajectories of a step go into samples.jsonl for the report.
const samplesPerStep = 4

// reportSamples turns up to samplesPerStep rows of a step's batch into report samples: every
// token with its role, action mask, advantage mask, advantage and reward exactly as the update
// sees them, and each tool call with its observation. Rows are taken from different GRPO groups
// first, so one group does not fill the quota.
func reportSamples(b *trainer.StepBatch, tok *tokenizer.Tokenizer) []report.Sample {
	col := b.Collated
	batch := col.Batch
	var out []report.Sample
	seen := map[int]bool{}
	for pass := 0; pass < 2 && len(out) < samplesPerStep; pass++ {
		for i := 0; i < batch.B && len(out) < samplesPerStep; i++ {
			g := col.Groups[i]
			if pass == 0 && seen[g] || pass == 1 && seen[-1-i] {
				continue
			}
			seen[g], seen[-1-i] = true, true
			out = append(out, reportSample(b, i, tok))
		}
	}
	return out
}

func reportSample(b *trainer.StepBatch, i int, tok *tokenizer.Tokenizer) report.Sample {
	col := b.Collated
	batch := col.Batch
	s := col.Results[i]
	piece := func(id int) string { return tok.Decode([]int{id}) }
	rs := report.Sample{Step: b.Step, Split: "train", EM: s.Stats[trainer.StatEM], F1: s.Stats[trainer.StatF1],
		OutcomeReward: s.OutcomeReward, Group: sampleGroup(b, i)}
	for _, turn := range s.Turns {
		for _, c := range turn.ToolCalls {
			rs.ProcessReward += c.Reward
		}
	}
	rs.Reward = rs.OutcomeReward + rs.ProcessReward
	if i < len(b.Answers) {
		rs.Gold = b.Answers[i]
	}
	prompt := tok.Decode(s.Prompt)
	rs.Question = lastUserMessage(prompt)
	for _, id := range s.Prompt {
		rs.Tokens = append(rs.Tokens, report.Token{Text: piece(id), Role: report.RolePrompt})
	}
	L := batch.L
	for j := 0; j < batch.ResponseLens[i]; j++ {
		k := i*L + j
		t := report.Token{Text: piece(batch.Responses[k]), Role: report.RoleObservation,
			ActionMask: int(b.LossMask[k]), AdvantageMask: int(b.AdvantageMask[k]), Reward: b.Rewards[k]}
		if batch.ActionMask[k] != 0 {
			t.Role = report.RoleAgent
			t.LogProb = float32(batch.OldLogProbs[k])
		}
		if b.AdvantageMask[k] != 0 {
			t.Advantage = b.Advantages[k]
		}
		rs.Tokens = append(rs.Tokens, t)
	}
	// Tool calls: an agent turn closing a call, and the observation that answers it.
	for k, turn := range s.Turns {
		text := tok.Decode(turn.Action)
		if ans, ok := between(text, "<answer>", "</answer>"); ok {
			rs.Answer = ans
		}
		call, ok := between(text, "<tool_call>", "</tool_call>")
		if !ok {
			continue
		}
		tc := report.ToolCall{Turn: k + 1, Name: "search", Arguments: strings.TrimSpace(call)}
		if len(turn.Observation) > 0 {
			tc.Result = report.ToolOutput(tok.Decode(turn.Observation))
		}
		rs.ToolCalls = append(rs.ToolCalls, tc)
	}
	switch {
	case s.CutMaxLength:
		rs.Outcome = "cut: max length"
	case s.CutMaxTurns:
		rs.Outcome = "cut: max turns"
	case s.CutTurnTokens:
		rs.Outcome = "cut: max tokens in a turn"
	case rs.Answer != "":
		rs.Outcome = "answered"
	default:
		rs.Outcome = "ended without an answer"
	}
	return rs
}

// sampleGroup is row i's group in the step: every member's total reward as the advantage
// estimator reads it (the sum of the row's token rewards), their mean and unbiased standard
// deviation (GRPO's σ, rl.GRPOAdvantage), and whether they are all equal; nil for a group of
// one (PPO, REINFORCE++, ...).
func sampleGroup(b *trainer.StepBatch, i int) *report.Group {
	col := b.Collated
	L := col.Batch.L
	g := &report.Group{ID: col.Groups[i], Tied: true}
	for j, id := range col.Groups {
		if id != g.ID {
			continue
		}
		if j == i {
			g.Member = len(g.Rewards)
		}
		r := 0.0
		for _, x := range b.Rewards[j*L : (j+1)*L] {
			r += x
		}
		g.Tied = g.Tied && (len(g.Rewards) == 0 || r == g.Rewards[0])
		g.Rewards = append(g.Rewards, r)
	}
	n := float64(len(g.Rewards))
	if n < 2 {
		return nil
	}
	for _, r := range g.Rewards {
		g.Mean += r
	}
	g.Mean /= n
	for _, r := range g.Rewards {
		g.Std += (r - g.Mean) * (r - g.Mean)
	}
	g.Std = math.Sqrt(g.Std / (n - 1))
	return g
}

// lastUserMessage returns the content of the last ChatML user turn of a rendered prompt.
func lastUserMessage(prompt string) string {
	const open = "<|im_start|>user\n"
	k := strings.LastIndex(prompt, open)
	if k < 0 {
		return ""
	}
	msg := prompt[k+len(open):]
	if end := strings.Index(msg, "<|im_end|>"); end >= 0 {
		msg = msg[:end]
	}
	return strings.TrimSpace(msg)
}

// between returns the text between the last open tag and the close tag after it.
func between(text, open, close string) (string, bool) {
	k := strings.LastIndex(text, open)
	if k < 0 {
		return "", false
	}
	rest := text[k+len(open):]
	end := strings.Index(rest, close)
	if end < 0 {
		return "", false
	}
	return rest[:end], true
}
