package env

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Config sets the limits of a ToolEnv.
type Config struct {
	// MaxTurns is the number of agent turns (generations) per episode. A turn that still calls
	// a tool at this limit ends the episode cut (EndMaxTurns) without running its calls: no
	// generation would read their results. Agent-R1's scripts use 5 to 10.
	MaxTurns int
	// MaxCallsPerTurn bounds the calls run in one turn; further well-formed calls become
	// ErrTooManyCalls errors. <= 0 means no bound.
	MaxCallsPerTurn int
	// MaxOutputChars cuts each tool's output to this many bytes (on a rune boundary), followed
	// by OutputCutMarker naming the bytes removed, so one verbose result cannot flood the
	// context and the agent sees that it was cut. <= 0 means no cut. It bounds what the agent
	// reads, not what a tool allocates: a tool bounds its own output (search.Tool does).
	MaxOutputChars int
	// Timeout bounds one tool call. A tool should honour its context; one that does not is
	// abandoned at the deadline (its goroutine finishes in the background).
	Timeout time.Duration
}

// DefaultConfig returns the limits agentr1 uses unless told otherwise: 5 turns, 3 calls per
// turn, 2000-byte outputs, a 10 s timeout.
func DefaultConfig() Config {
	return Config{MaxTurns: 5, MaxCallsPerTurn: 3, MaxOutputChars: 2000, Timeout: 10 * time.Second}
}

// CallStatus is the outcome of one tool call attempt.
type CallStatus int

// Outcomes of a call. The first four are the agent's format errors (they count toward the
// format reward); the next four are the tool's own failures.
const (
	CallOK          CallStatus = iota // ran and returned text
	CallParseError                    // malformed <tool_call> (see ParseErrorKind)
	CallUnknownTool                   // no tool of that name
	CallInvalidArgs                   // arguments do not satisfy the tool's schema
	CallToolError                     // the tool returned an error
	CallTimeout                       // the tool did not return within Config.Timeout
	CallPanic                         // the tool panicked; the panic was recovered
	CallCancelled                     // the caller's context was cancelled
	CallNotRun                        // well-formed, but the episode was cut at MaxTurns
)

var callStatusNames = [...]string{"ok", "parse_error", "unknown_tool", "invalid_args",
	"tool_error", "timeout", "panic", "cancelled", "not_run"}

// String is the status's snake_case name, for logs.
func (s CallStatus) String() string {
	if int(s) < len(callStatusNames) {
		return callStatusNames[s]
	}
	return fmt.Sprintf("CallStatus(%d)", int(s))
}

// FormatError reports whether the status is the agent's mistake in writing the call.
func (s CallStatus) FormatError() bool {
	return s == CallParseError || s == CallUnknownTool || s == CallInvalidArgs
}

// ToolFailure reports whether the status is a failure of the tool itself.
func (s CallStatus) ToolFailure() bool {
	return s == CallToolError || s == CallTimeout || s == CallPanic || s == CallCancelled
}

// CallRecord is what happened to one tool call attempt of a turn.
type CallRecord struct {
	Call       ToolCall      // the parsed call; zero Name for a parse error
	Parse      *ParseError   // set when Status is CallParseError
	Status     CallStatus    // how the attempt ended
	Err        string        // the failure, for logs (a panic's value and stack are not shown to the agent)
	Output     string        // the text shown to the agent inside <tool_response>
	Truncated  bool          // Output was cut to MaxOutputChars (and ends with OutputCutMarker)
	PassageIDs []string      // passages the call returned, when the tool is a PassageTool
	Duration   time.Duration // the tool's wall time (0 for a call that did not run)
	// ProcessReward is what the environment's ProcessReward hook paid for this call (0 without
	// a hook).
	ProcessReward float64
}

// ProcessReward is the one hook through which tool calls earn a process reward (a reward
// placed on the token that closes the call, beside the episode's outcome reward). The ToolEnv
// calls it once for every call record of a turn, after the call ran (or failed), and stores
// what it returns in CallRecord.ProcessReward. It belongs to one episode, so it may keep
// state across the episode's calls (the QA environment pays for a supporting passage only the
// first time it is found); a tool that rewards its own calls is given a hook that reads its
// records (Status, Output, PassageIDs).
type ProcessReward func(rec *CallRecord) float64

// EndReason says why an episode ended.
type EndReason int

// Reasons an episode ends.
const (
	EndNone       EndReason = iota // not ended
	EndNoToolCall                  // the agent wrote a turn without a tool call: its final answer
	EndMaxTurns                    // the turn limit was reached while the agent still called tools
)

// String is the reason's snake_case name, for logs.
func (r EndReason) String() string {
	return [...]string{"none", "no_tool_call", "max_turns"}[r]
}

// StepResult is the environment's answer to one agent turn.
type StepResult struct {
	Turn        int          // 1-based index of the turn just taken
	Calls       []CallRecord // every call attempt of the turn, in text order
	Observation string       // ObservationText of the calls' outputs; "" when Done
	// ObservationTail is the length in bytes of the ObservationClose that ends Observation (0
	// when Done): the part a token budget must not cut (rollout.Transition.ObservationTail).
	ObservationTail int
	Done            bool      // the episode has ended
	End             EndReason // why it ended (EndNone while not Done)
}

// Stats counts an episode's tool use, for rewards and logs.
type Stats struct {
	Turns        int // agent turns taken
	ToolCalls    int // call attempts, well-formed or not
	FormatErrors int // CallParseError + CallUnknownTool + CallInvalidArgs
	ToolErrors   int // CallToolError + CallTimeout + CallPanic + CallCancelled
	Executed     int // calls handed to their tool (CallOK and the tool failures)
	// ProcessReward is the sum of the calls' process rewards.
	ProcessReward float64
	// ByTool counts the calls of each of the environment's tools, by name (nil before the
	// first). A call naming no tool of the environment, or that did not parse, counts only in
	// the totals above.
	ByTool map[string]ToolCount
}

// ToolCount is one tool's share of an episode's calls.
type ToolCount struct {
	Calls  int // calls naming the tool
	Errors int // of which invalid arguments or failures of the tool (CallInvalidArgs, ToolFailure)
}

// ToolEnv is the transition function of the paper's extended MDP for tool use (Agent-R1
// section 3.1, docs/PAPER.md section 2): for each agent turn it parses the tool calls, validates
// their arguments, runs the tools and formats the observation; it decides when the episode
// ends. Task-specific environments (env/qa) wrap it and add the reward.
//
// A ToolEnv holds one episode's state and is not safe for concurrent use; the tools it holds
// are shared and must be.
type ToolEnv struct {
	cfg    Config
	tools  map[string]Tool
	names  []string      // sorted, for messages
	reward ProcessReward // nil: no process reward
	stats  Stats
	done   bool
}

// NewToolEnv returns an environment offering tools under cfg. It fails if two tools share a
// name, a name is empty, or a tool's parameter schema is not one Validate understands.
func NewToolEnv(cfg Config, tools ...Tool) (*ToolEnv, error) {
	e := &ToolEnv{cfg: cfg, tools: make(map[string]Tool, len(tools))}
	if cfg.MaxTurns < 1 {
		return nil, fmt.Errorf("env: MaxTurns = %d, need >= 1", cfg.MaxTurns)
	}
	for _, t := range tools {
		name := t.Name()
		if name == "" {
			return nil, errors.New("env: tool with an empty name")
		}
		if _, dup := e.tools[name]; dup {
			return nil, fmt.Errorf("env: two tools named %q", name)
		}
		if err := t.Parameters().Check(); err != nil {
			return nil, fmt.Errorf("env: tool %q: %w", name, err)
		}
		e.tools[name] = t
		e.names = append(e.names, name)
	}
	sort.Strings(e.names)
	return e, nil
}

// Tools returns the environment's tools sorted by name, for RenderTools.
func (e *ToolEnv) Tools() []Tool {
	out := make([]Tool, len(e.names))
	for i, n := range e.names {
		out[i] = e.tools[n]
	}
	return out
}

// SetProcessReward installs the episode's process-reward hook (nil removes it). It stays
// across Reset: a hook with state must clear it itself when a new episode starts.
func (e *ToolEnv) SetProcessReward(f ProcessReward) { e.reward = f }

// Config returns the environment's limits.
func (e *ToolEnv) Config() Config { return e.cfg }

// Reset starts a new episode.
func (e *ToolEnv) Reset() {
	e.stats = Stats{}
	e.done = false
}

// Stats returns the counts of the episode so far.
func (e *ToolEnv) Stats() Stats { return e.stats }

// Done reports whether the episode has ended.
func (e *ToolEnv) Done() bool { return e.done }

// Step takes the agent's text for one turn (decoded from the sampled tokens, special tokens
// included) and returns the environment's answer. A turn with no "<tool_call>" or
// "</tool_call>" tag at all ends the episode (EndNoToolCall): it is the final answer. Any other
// turn is answered with one <tool_response> per call attempt: the tool's output, or an error
// text the agent can learn from (malformed call, unknown tool, invalid arguments, tool error,
// timeout, panic). Nothing the agent writes makes Step fail or panic.
//
// It panics if called after the episode has ended (a rollout bug).
func (e *ToolEnv) Step(ctx context.Context, agentText string) StepResult {
	if e.done {
		panic("env.ToolEnv.Step: episode already ended; call Reset")
	}
	e.stats.Turns++
	res := StepResult{Turn: e.stats.Turns}
	calls, perrs := ParseToolCalls(agentText, e.cfg.MaxCallsPerTurn)
	if len(calls) == 0 && len(perrs) == 0 {
		e.done, res.Done, res.End = true, true, EndNoToolCall
		return res
	}
	cutHere := e.stats.Turns >= e.cfg.MaxTurns
	res.Calls = e.records(calls, perrs)
	outputs := make([]string, len(res.Calls))
	for i := range res.Calls {
		rec := &res.Calls[i]
		if rec.Status == CallOK { // parsed and valid: run it unless the episode is cut
			if cutHere {
				rec.Status = CallNotRun
			} else {
				e.run(ctx, rec)
			}
		}
		e.stats.ToolCalls++
		if rec.Status.FormatError() {
			e.stats.FormatErrors++
		}
		if rec.Status.ToolFailure() {
			e.stats.ToolErrors++
		}
		if rec.Status == CallOK || rec.Status.ToolFailure() {
			e.stats.Executed++
		}
		if _, known := e.tools[rec.Call.Name]; known {
			if e.stats.ByTool == nil {
				e.stats.ByTool = make(map[string]ToolCount, len(e.tools))
			}
			c := e.stats.ByTool[rec.Call.Name]
			c.Calls++
			if rec.Status == CallInvalidArgs || rec.Status.ToolFailure() {
				c.Errors++
			}
			e.stats.ByTool[rec.Call.Name] = c
		}
		if e.reward != nil {
			rec.ProcessReward = e.reward(rec)
			e.stats.ProcessReward += rec.ProcessReward
		}
		outputs[i] = rec.Output
	}
	if cutHere {
		e.done, res.Done, res.End = true, true, EndMaxTurns
		return res
	}
	turnClosed := strings.HasSuffix(strings.TrimRight(agentText, " \n"), ImEnd)
	res.Observation = ObservationText(outputs, turnClosed)
	res.ObservationTail = len(ObservationClose) // Calls is not empty: a response closes it
	return res
}

// records merges well-formed calls and parse errors in text order and checks each call's
// tool and arguments; records left at CallOK are ready to run.
func (e *ToolEnv) records(calls []ToolCall, perrs []*ParseError) []CallRecord {
	recs := make([]CallRecord, 0, len(calls)+len(perrs))
	offsets := make([]int, 0, cap(recs))
	for _, c := range calls {
		rec := CallRecord{Call: c, Status: CallOK}
		if t, ok := e.tools[c.Name]; !ok {
			rec.Status = CallUnknownTool
			rec.Err = fmt.Sprintf("unknown tool %q; tools: %s", c.Name, strings.Join(e.names, ", "))
		} else if err := t.Parameters().Validate(c.Arguments); err != nil {
			rec.Status = CallInvalidArgs
			rec.Err = fmt.Sprintf("invalid arguments for %s: %s", c.Name,
				strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		if rec.Status != CallOK {
			rec.Output = "Error: " + rec.Err
		}
		recs = append(recs, rec)
		offsets = append(offsets, c.Start)
	}
	for _, p := range perrs {
		rec := CallRecord{Parse: p, Status: CallParseError, Err: p.Error()}
		rec.Output = "Error: " + p.Error() + `. Write <tool_call>{"name": ..., "arguments": {...}}</tool_call>`
		recs = append(recs, rec)
		offsets = append(offsets, p.Offset)
	}
	idx := make([]int, len(recs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return offsets[idx[a]] < offsets[idx[b]] })
	sorted := make([]CallRecord, len(recs))
	for i, j := range idx {
		sorted[i] = recs[j]
	}
	return sorted
}

// run executes one validated call with the timeout, recovering a panic, and fills rec.
func (e *ToolEnv) run(ctx context.Context, rec *CallRecord) {
	tool := e.tools[rec.Call.Name]
	callCtx := ctx
	if e.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, e.cfg.Timeout)
		defer cancel()
	}
	type outcome struct {
		text     string
		ids      []string
		err      error
		panicked any
	}
	done := make(chan outcome, 1) // buffered: an abandoned call's goroutine never blocks
	start := time.Now()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{panicked: p}
			}
		}()
		var o outcome
		if pt, ok := tool.(PassageTool); ok {
			o.text, o.ids, o.err = pt.CallPassages(callCtx, rec.Call.Arguments)
		} else {
			o.text, o.err = tool.Call(callCtx, rec.Call.Arguments)
		}
		done <- o
	}()
	var o outcome
	select {
	case o = <-done:
	case <-callCtx.Done():
		o.err = callCtx.Err()
	}
	rec.Duration = time.Since(start)
	name := rec.Call.Name
	switch {
	case o.panicked != nil:
		rec.Status, rec.Err = CallPanic, fmt.Sprintf("tool %s panicked: %v", name, o.panicked)
		rec.Output = "Error: " + name + " failed (internal error)"
	case o.err != nil && ctx.Err() != nil:
		rec.Status, rec.Err = CallCancelled, fmt.Sprintf("tool %s: %v", name, ctx.Err())
		rec.Output = "Error: " + name + " was cancelled"
	case o.err != nil && errors.Is(o.err, context.DeadlineExceeded):
		rec.Status, rec.Err = CallTimeout, fmt.Sprintf("tool %s timed out after %v", name, e.cfg.Timeout)
		rec.Output = "Error: " + name + " timed out"
	case o.err != nil:
		rec.Status, rec.Err = CallToolError, fmt.Sprintf("tool %s: %v", name, o.err)
		rec.Output = "Error: " + o.err.Error()
	default:
		rec.Status, rec.PassageIDs = CallOK, o.ids
		rec.Output = o.text
	}
	if e.cfg.MaxOutputChars > 0 && len(rec.Output) > e.cfg.MaxOutputChars {
		rec.Output, rec.Truncated = cutOutput(rec.Output, e.cfg.MaxOutputChars), true
	}
}

// OutputCutMarker, formatted with the number of bytes removed, ends a tool output cut to
// Config.MaxOutputChars.
const OutputCutMarker = "...[truncated %d bytes]"

// cutOutput cuts s to at most n bytes on a rune boundary and appends OutputCutMarker. It
// expects len(s) > n.
func cutOutput(s string, n int) string {
	i := n
	for i > 0 && !isRuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf(OutputCutMarker, len(s)-i)
}
