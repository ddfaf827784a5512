package qa

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"agentr1/env"
	"agentr1/env/calc"
)

// DefaultInstructions is the task part of the system prompt: think, search, answer. The tool
// signatures follow it (see SystemPrompt).
const DefaultInstructions = `Answer the question. You can search a wiki. ` +
	`Think step by step inside <think> </think>. To search, write:
<tool_call>
{"name": "search", "arguments": {"query": "..."}}
</tool_call>
The results come back inside <tool_response> </tool_response>. Search as often as you need. ` +
	`When you know the answer, think, then give only the short answer inside <answer> </answer>.`

// ToolInstructions is the task part of the system prompt when the tools are not search alone:
// the same task and format, with the call written for any tool of the <tools> block.
const ToolInstructions = `Answer the question. You can call the tools listed below. ` +
	`Think step by step inside <think> </think>. To call a tool, write:
<tool_call>
{"name": <tool name>, "arguments": <arguments object>}
</tool_call>
The results come back inside <tool_response> </tool_response>. Call tools as often as you need. ` +
	`When you know the answer, think, then give only the short answer inside <answer> </answer>.`

// InstructionsFor returns the instructions for tools: DefaultInstructions for the search tool
// alone, ToolInstructions otherwise.
func InstructionsFor(tools []env.Tool) string {
	if len(tools) == 1 && tools[0].Name() == "search" {
		return DefaultInstructions
	}
	return ToolInstructions
}

// SystemPrompt renders instructions followed by the tools' signatures in Qwen2.5's
// <tools> block.
func SystemPrompt(instructions string, tools []env.Tool) string {
	return instructions + "\n\n# Tools\n\n" + env.RenderTools(tools)
}

// UserMessage renders the question as the user turn ("Question: ...", docs/PAPER.md section 3).
func UserMessage(q Question) string { return "Question: " + q.Question }

// Config sets up a QA environment.
type Config struct {
	Env env.Config // the tool environment's limits (turns, output size, call timeout)
	// SystemPrompt is the whole system message; "" means SystemPrompt(InstructionsFor(tools), tools).
	SystemPrompt string
	// RequireThink makes a <think>...</think> block part of the required format of every turn,
	// as in Agent-R1's reward.
	RequireThink bool
	// ProcessReward is paid for each tool call whose results hold a supporting passage of the
	// question not returned before in the episode (so repeating a search earns nothing). 0
	// turns process rewards off. It needs tools implementing env.PassageTool and questions with
	// SupportingPIDs.
	ProcessReward float64
	// AnswerReward is paid for the first tool call of an episode whose whole result is an
	// answer to the question, matched as the outcome matches the final answer: a calculation
	// that gives the asked number. It is the process reward of the step that works the answer
	// out, as ProcessReward is that of the step that finds a supporting passage. 0 turns it
	// off; a search's passages never match, so it pays nothing in a search-only environment.
	AnswerReward float64
	// OperandReward is paid for the episode's first calculator call (the tool named
	// calc.Name) that runs: OperandReward times the share of the question's Operands its
	// expression holds, compared as numbers are (NumericMatch). A calculation on both numbers
	// the question is about earns all of it, one on a number written twice half of it, one on
	// numbers the question is not about nothing; whether the operation and its order were
	// right is the outcome's to judge. It is the process reward of reading the right numbers
	// into the calculation, as ProcessReward is that of finding the right passages. 0 turns it
	// off; a question without Operands pays nothing.
	OperandReward float64
}

// PaysProcessRewards reports whether any process reward is on, so that the environment
// installs its hook and demonstrations carry what it pays.
func (c Config) PaysProcessRewards() bool {
	return c.ProcessReward != 0 || c.AnswerReward != 0 || c.OperandReward != 0
}

// DefaultConfig is env.DefaultConfig with the think block required and no process reward.
func DefaultConfig() Config {
	return Config{Env: env.DefaultConfig(), RequireThink: true}
}

// Env is one episode of multi-hop QA: a ToolEnv for the transitions plus the question, the
// agent's turns and the reward. It is not safe for concurrent use; create one per episode
// slot (the tools may be shared).
type Env struct {
	cfg        Config
	tools      *env.ToolEnv
	system     string
	q          Question
	turns      []string        // the agent's text per turn
	support    map[string]bool // the question's supporting pids
	found      map[string]bool // supporting pids already rewarded
	worked     bool            // a tool call has already returned the answer (AnswerReward paid)
	calculated bool            // the calculator has run once (OperandReward paid)
	toolOK     bool            // every tool turn well formed so far
}

// New returns a QA environment offering tools.
func New(cfg Config, tools ...env.Tool) (*Env, error) {
	te, err := env.NewToolEnv(cfg.Env, tools...)
	if err != nil {
		return nil, fmt.Errorf("qa: %w", err)
	}
	e := &Env{cfg: cfg, tools: te, system: cfg.SystemPrompt}
	if cfg.PaysProcessRewards() {
		te.SetProcessReward(e.processReward)
	}
	if e.system == "" {
		e.system = SystemPrompt(InstructionsFor(te.Tools()), te.Tools())
	}
	return e, nil
}

// System returns the system message the prompts use.
func (e *Env) System() string { return e.system }

// Reset starts an episode on q and returns its prompt: the system and user messages in ChatML
// and the opening of the assistant's turn, the text the rollout tokenises as the prompt.
func (e *Env) Reset(q Question) string {
	e.tools.Reset()
	e.q = q
	e.turns = e.turns[:0]
	e.support = make(map[string]bool, len(q.SupportingPIDs))
	for _, id := range q.SupportingPIDs {
		e.support[id] = true
	}
	e.found = map[string]bool{}
	e.worked = false
	e.calculated = false
	e.toolOK = true
	return env.RenderPrompt(e.system, UserMessage(q))
}

// MaxTurns is the episode's turn limit (Config.Env.MaxTurns).
func (e *Env) MaxTurns() int { return e.cfg.Env.MaxTurns }

// Question returns the episode's question.
func (e *Env) Question() Question { return e.q }

// Step is the environment's answer to one turn: the ToolEnv's result and the process reward
// of each call, aligned with Result.Calls. The rollout does not place them call by call: it
// sums them onto the turn's last token, the `</tool_call>` that stopped the turn
// (pipeline.QAEpisode.Step adds them up, rollout.recordToolCall places the sum). That is the
// same as placing each call's reward on its own closing token, because a turn stops at its
// first `</tool_call>` and so closes at most one call.
type Step struct {
	env.StepResult
	ProcessRewards []float64 // one per Result.Calls entry, in order
}

// Step takes the agent's text for one turn. It panics if the episode has ended.
func (e *Env) Step(ctx context.Context, agentText string) Step {
	res := e.tools.Step(ctx, agentText)
	e.turns = append(e.turns, agentText)
	s := Step{StepResult: res, ProcessRewards: make([]float64, len(res.Calls))}
	if len(res.Calls) > 0 {
		if !CheckToolTurn(agentText, e.cfg.RequireThink) {
			e.toolOK = false
		}
		for _, c := range res.Calls {
			if c.Status.FormatError() {
				e.toolOK = false
			}
		}
	}
	for i, c := range res.Calls {
		s.ProcessRewards[i] = c.ProcessReward
	}
	return s
}

// processReward is the QA environment's process-reward hook (env.ProcessReward): for a call
// whose results hold a supporting passage of the question not returned before in the episode,
// Config.ProcessReward; for the episode's first call whose whole result is an answer,
// Config.AnswerReward; for its first calculator call, Config.OperandReward by the operands
// it holds.
func (e *Env) processReward(rec *env.CallRecord) float64 {
	r := 0.0
	newFind := false
	for _, id := range rec.PassageIDs {
		if e.support[id] && !e.found[id] {
			e.found[id], newFind = true, true
		}
	}
	if newFind {
		r += e.cfg.ProcessReward
	}
	if e.cfg.AnswerReward != 0 && !e.worked && rec.Status == env.CallOK && e.isAnswer(rec.Output) {
		e.worked = true
		r += e.cfg.AnswerReward
	}
	if e.cfg.OperandReward != 0 && !e.calculated && rec.Status == env.CallOK && rec.Call.Name == calc.Name {
		e.calculated = true
		r += e.cfg.OperandReward * operandShare(calc.ExpressionOf(rec.Call.Arguments), e.q.Operands)
	}
	return r
}

// number is a decimal number as an expression writes one.
var number = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// Numbers returns the decimal numbers written in text, in order ("1838 - 1405 is 433." holds
// "1838", "1405" and "433"); a comma splits a number, as in an expression.
func Numbers(text string) []string { return number.FindAllString(text, -1) }

// operandShare is the share of operands (numbers as a passage states them) that expr writes,
// compared as numbers by the rule a numeric answer is (NumericMatch: "1609.0" holds 1609); 0
// without operands.
func operandShare(expr string, operands []string) float64 {
	if len(operands) == 0 {
		return 0
	}
	written := Numbers(expr)
	held := 0.0
	for _, o := range operands {
		held += NumericMatch(o, written)
	}
	return held / float64(len(operands))
}

// isAnswer reports whether a tool's whole result is an answer to the question, by the rule
// Score matches the final answer with. A numeric result must be the number alone: a result
// that only begins with it ("83 years later") does not state it.
func (e *Env) isAnswer(result string) bool {
	if e.q.Numeric {
		return len(strings.Fields(result)) == 1 && NumericMatch(result, e.q.Answers) == 1
	}
	return ExactMatch(result, e.q.Answers) == 1
}

// Done reports whether the episode has ended.
func (e *Env) Done() bool { return e.tools.Done() }

// Turns returns the agent's text of each turn so far.
func (e *Env) Turns() []string { return e.turns }

// Score computes the episode's outcome (paper Eq. 6) from the turns taken so far. An episode
// that has not ended, or ended at the turn limit, has no answer turn: its answer format fails.
func (e *Env) Score() Score {
	st := e.tools.Stats()
	s := Score{
		ToolSyntaxOK:  e.toolOK,
		ProcessReward: st.ProcessReward,
		Turns:         st.Turns,
		Searches:      st.Executed,
		ToolErrors:    st.ToolErrors,
		FormatErrors:  st.FormatErrors,
		ByTool:        st.ByTool,
	}
	answerTurn := e.tools.Done() && len(e.turns) > 0 && !hasToolTags(e.turns[len(e.turns)-1])
	if !answerTurn && e.tools.Done() {
		s.CutMaxTurns = true
	}
	if len(e.turns) > 0 {
		var ok bool
		s.Answer, ok = CheckAnswerTurn(e.turns[len(e.turns)-1], e.cfg.RequireThink)
		s.AnswerFormatOK = ok && answerTurn
	}
	s.EM = ExactMatch(s.Answer, e.q.Answers)
	if e.q.Numeric {
		s.EM = NumericMatch(s.Answer, e.q.Answers)
	}
	s.F1 = F1(s.Answer, e.q.Answers)
	if s.Answer == "" {
		s.EM, s.F1 = 0, 0
	}
	s.Reward, s.Format = Eq6(s.AnswerFormatOK, s.ToolSyntaxOK, s.EM)
	return s
}

func hasToolTags(s string) bool {
	return strings.Contains(s, env.ToolCallOpen) || strings.Contains(s, env.ToolCallClose)
}
