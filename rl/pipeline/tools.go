package pipeline

import (
	"fmt"
	"strings"

	"agentr1/env"
	"agentr1/env/calc"
	"agentr1/rl/trainer"
)

// ToolRegistry returns the tools a run can choose by name (Config.Tools, `--tools`):
//
//	search      BM25 over the world's or corpus's passages, top-k per call (search.Tool)
//	calculator  arithmetic on the agent's expression (calc.Tool)
func ToolRegistry() *env.Registry {
	r := env.NewRegistry()
	mustRegister(r, "search", func(s env.ToolSetup) (env.Tool, error) {
		tools, err := SearchTools(s.Passages, s.TopK, s.Workers)
		if err != nil {
			return nil, err
		}
		return tools[0], nil
	})
	mustRegister(r, calc.Name, func(env.ToolSetup) (env.Tool, error) { return calc.Tool{}, nil })
	return r
}

// mustRegister registers a built-in tool; a failure is a programming error (a name given twice).
func mustRegister(r *env.Registry, name string, f env.ToolFactory) {
	if err := r.Register(name, f); err != nil {
		panic(err)
	}
}

// DefaultTools is the tool choice of DefaultConfig, and of an empty Tools setting (a config.json
// written before the setting existed): search alone.
var DefaultTools = env.ToolNames{"search"}

// BuildTools builds the tools called names (DefaultTools when empty) over passages from
// ToolRegistry, in the order named.
func BuildTools(names env.ToolNames, passages []env.Passage, topK, workers int) ([]env.Tool, error) {
	if len(names) == 0 {
		names = DefaultTools
	}
	return ToolRegistry().Build(names, env.ToolSetup{Passages: passages, TopK: topK, Workers: workers})
}

// NumericShare is the share of numeric questions (world.Config.Numeric) in each world of a run
// offered the calculator whose settings leave that world's share unset (CalculatorTask).
// At 0.3, a held-out or unseen set of 100 questions holds about 30 that need the calculator,
// and the other 70 keep the search-only task's mix of types.
const NumericShare = 0.3

// CalculatorTask lists the settings of the calculator task: a run offered the calculator
// (Tools holds calc.Name) takes them, except those the user gave (ForCalculator). Each names
// its Config field as config.json does; docs/RESULTS.md section 6 measures each against the run
// without it.
var CalculatorTask = []Setting{
	{"RL.Steps", 90, "REINFORCE++'s steps cost four times GRPO's; 90 keep the whole run within 15 minutes on 2 cores"},
	{"TrainWorld.Numeric", NumericShare, "the training worlds hold questions that need the calculator"},
	{"EvalWorld.Numeric", NumericShare, "and so does the evaluation world"},
	{"OperandRew", 0.2, "a calculation on the question's two numbers is paid; without it RL stops calling the calculator"},
	{"StartStatesAnswer", 0.5, "half the start states after a calculation begin with its result read, so RL practises the answer turn"},
	{"StartStatesAnswerTool", "calculator", "and only those: the answer turn after a search is practised from the policy's own notes"},
	{"SFT.CalcCallWeight", 5.0, "the warm start learns to calculate on the numbers read, which few demonstrations reach"},
	{"SFT.CalcAnswerWeight", 5.0, "and to answer the result; RL teaches neither"},
	{"SFT.ChoiceAnswerWeight", 5.0, "and to answer a choice of two names with a name, not a number; RL then keeps the calculator off those questions"},
}

// CalculatorAlgorithm is the RL algorithm of the calculator task, with its defaults
// (trainer.DefaultRLConfig), when the user names none. REINFORCE++'s return at a token holds
// only the rewards after it, so the answer turn after a calculation is paid by the outcome
// alone; GRPO gives every token the trajectory's summed reward, searches and operands
// included, and undoes the warm start's answering of the result (docs/RESULTS.md section 6).
const CalculatorAlgorithm = trainer.ReinforcePP

// ForCalculator gives a run the task its tools are for: when the calculator is among Tools,
// the CalculatorTask settings, except those the user gave (given reports a Config field set by
// a flag or a configuration file), and returns the ones it set as "Field=value". A user who
// asks for the calculator then trains and is evaluated on questions that need it. A run
// without the calculator (the default, search alone) is left as it is. The algorithm is the
// caller's to choose (CalculatorAlgorithm), since its defaults come before the user's settings.
func (c *Config) ForCalculator(given func(field string) bool) []string {
	if !c.OffersCalculator() {
		return nil
	}
	return c.apply(CalculatorTask, given)
}

// OffersCalculator reports whether the run offers the calculator, and so is the calculator task.
func (c *Config) OffersCalculator() bool { return c.Tools.Has(calc.Name) }

// checkTools reports a Tools setting that names a tool ToolRegistry does not hold, and a tool
// setting that names one the run is not offered.
func (c *Config) checkTools() error {
	if t := c.StartStatesAnswerTool; t != "" && !c.Tools.Has(t) {
		return fmt.Errorf("config: StartStatesAnswerTool %q is not among the tools offered (Tools: %s)", t, c.Tools)
	}
	if (c.TrainWorld.Numeric > 0 || c.EvalWorld.Numeric > 0) && !c.OffersCalculator() {
		return fmt.Errorf("config: numeric questions (TrainWorld.Numeric %v, EvalWorld.Numeric %v) need the calculator in Tools (%s)",
			c.TrainWorld.Numeric, c.EvalWorld.Numeric, c.Tools)
	}
	for _, name := range c.Tools {
		if !ToolRegistry().Has(name) {
			return fmt.Errorf("config: Tools: unknown tool %q; registered tools: %s", name, strings.Join(ToolRegistry().Names(), ", "))
		}
	}
	return nil
}

// compactUsage is each built-in tool's sentence in the compact system prompt.
var compactUsage = map[string]string{
	"search": `To search the wiki, write <tool_call>
{"name": "search", "arguments": {"query": "..."}}
</tool_call>`,
	calc.Name: `To calculate, write <tool_call>
{"name": "calculator", "arguments": {"expression": "..."}}
</tool_call>`,
}

// compactSystemPrompt is the compact system message (Config.CompactPrompt) for the chosen
// tools: CompactSystemPrompt itself for search alone (or no choice: DefaultTools), else the same
// sentences with one call format per tool, in the order chosen.
func compactSystemPrompt(names env.ToolNames) string {
	if len(names) == 0 || (len(names) == 1 && names[0] == "search") {
		return CompactSystemPrompt
	}
	var b strings.Builder
	b.WriteString("Answer the question. ")
	for _, name := range names {
		usage, ok := compactUsage[name]
		if !ok {
			usage = "To call " + name + ", write <tool_call>\n{\"name\": \"" + name + "\", \"arguments\": {...}}\n</tool_call>"
		}
		b.WriteString(usage + ". ")
	}
	b.WriteString("The results come back in <tool_response> </tool_response>. " +
		"Think inside <think> </think> first. Give only the short answer inside <answer> </answer>.")
	return b.String()
}
