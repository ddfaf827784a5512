package qa

import (
	"regexp"
	"strings"

	"agentr1/env"
)

// Score is the outcome of one episode: the paper's Eq. 6 reward and the figures evaluation
// reports beside it.
type Score struct {
	Reward         float64                  // Eq. 6
	Format         float64                  // r_format = (AnswerFormatOK + ToolSyntaxOK) / 2
	AnswerFormatOK bool                     // the final turn is <think>...</think> then one <answer>...</answer>
	ToolSyntaxOK   bool                     // every tool-calling turn is well formed and every call parsed and validated
	Answer         string                   // the text inside the final turn's <answer>, "" if none
	EM             float64                  // SQuAD exact match of Answer against every gold alias (reported even when the format fails)
	F1             float64                  // HotpotQA token F1, best over the aliases
	ProcessReward  float64                  // sum of the process rewards paid along the episode
	Turns          int                      // agent turns taken
	Searches       int                      // tool calls that ran
	ToolErrors     int                      // calls whose tool failed (error, timeout, panic, cancelled)
	FormatErrors   int                      // calls that did not parse, named no tool or had invalid arguments
	CutMaxTurns    bool                     // the episode ended without an answer turn (the turn limit)
	ByTool         map[string]env.ToolCount // calls and errors per tool (env.Stats.ByTool)
}

// Eq6 is the outcome reward of the paper's Eq. 6 for multi-hop QA: with
// r_format = (answerFormatOK + toolSyntaxOK) / 2, the reward is the exact match em when the
// format is perfect (r_format = 1), else r_format - 1 (so -1 or -0.5): a malformed episode
// always scores below any well-formed one.
func Eq6(answerFormatOK, toolSyntaxOK bool, em float64) (reward, format float64) {
	if answerFormatOK {
		format += 0.5
	}
	if toolSyntaxOK {
		format += 0.5
	}
	if format == 1 {
		return em, format
	}
	return format - 1, format
}

var (
	thinkAnswerRe  = regexp.MustCompile(`(?s)^<think>(.*?)</think>\s*<answer>(.*?)</answer>$`)
	bareAnswerRe   = regexp.MustCompile(`(?s)^<answer>(.*?)</answer>$`)
	lastAnswerRe   = regexp.MustCompile(`(?s)<answer>(.*?)</answer>`)
	thinkToolRe    = regexp.MustCompile(`(?s)^<think>(.*?)</think>\s*(<tool_call>.*</tool_call>)$`)
	bareToolTurnRe = regexp.MustCompile(`(?s)^(<tool_call>.*</tool_call>)$`)
)

// trimTurn removes the end-of-turn marker and surrounding whitespace from an agent turn.
func trimTurn(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, env.ImEnd)
	return strings.TrimSpace(s)
}

// CheckAnswerTurn reports whether the final turn has the answer format Agent-R1 rewards,
// <think>...</think> then <answer>...</answer> and nothing else (the think block optional when
// requireThink is false), and returns the answer text. A turn that is not well formed still
// yields the last <answer>...</answer> it holds, for EM reporting.
func CheckAnswerTurn(text string, requireThink bool) (answer string, ok bool) {
	t := trimTurn(text)
	if m := lastAnswerRe.FindAllStringSubmatch(t, -1); len(m) > 0 {
		answer = strings.TrimSpace(m[len(m)-1][1])
	}
	if strings.Count(t, "<answer>") != 1 || strings.Count(t, "</answer>") != 1 ||
		strings.Contains(t, env.ToolCallOpen) || strings.Contains(t, env.ToolCallClose) {
		return answer, false
	}
	if m := thinkAnswerRe.FindStringSubmatch(t); m != nil {
		return answer, !strings.Contains(m[1], "<think>")
	}
	if !requireThink && strings.Count(t, "<think>") == 0 && strings.Count(t, "</think>") == 0 {
		return answer, bareAnswerRe.MatchString(t)
	}
	return answer, false
}

// CheckToolTurn reports whether a tool-calling turn has the layout Agent-R1 rewards:
// <think>...</think> then the tool call(s), nothing else (think optional when requireThink is
// false). Whether the calls themselves parse is the ToolEnv's finding (CallRecord.Status).
func CheckToolTurn(text string, requireThink bool) bool {
	t := trimTurn(text)
	if strings.Contains(t, "<answer>") || strings.Contains(t, "</answer>") {
		return false
	}
	if m := thinkToolRe.FindStringSubmatch(t); m != nil {
		return !strings.Contains(m[1], "<think>") && !strings.Contains(m[1], "</think>") &&
			!strings.Contains(m[2], "<think>")
	}
	return !requireThink && !strings.Contains(t, "<think>") && bareToolTurnRe.MatchString(t)
}
