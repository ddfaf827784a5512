package rollout

import (
	"context"
	"fmt"
	"math/rand/v2"

	"agentr1/mdp"
)

// Decoder is batched KV-cache inference over independent rows; *model.Decoder implements it.
type Decoder interface {
	// Reset empties row's cache.
	Reset(row int)
	// Append feeds tokens to row's cache and returns the next-token logits (V) after the last.
	Append(row int, tokens []int) []float32
	// Step feeds one token to each listed row in one batched call and returns each row's
	// next-token logits (len(rows) slices of V).
	Step(rows []int, tokens []int) [][]float32
	// Len is the number of tokens in row's cache.
	Len(row int) int
}

// Sampler draws a token from next-token logits and returns it with its log-probability under
// the sampling distribution before top-k/top-p filtering; model.Sampler implements it.
type Sampler interface {
	Sample(logits []float32, rng *rand.Rand) (token int, logp float32)
}

// Encoder turns observation text into token ids and generated ids back into text (for the
// environment to parse); *tokenizer.Tokenizer implements it through an adapter if needed.
type Encoder interface {
	Encode(text string) []int
	Decode(ids []int) string
}

// Episode is one environment episode, driven turn by turn by the rollout. Implementations keep
// the episode's state (question, tool results, rewards) and must be safe to use from one
// goroutine at a time; different episodes run concurrently.
type Episode interface {
	// Step gives the environment the decoded text of one agent turn (everything generated since
	// the last observation, including the stop tag if one was generated). It returns the
	// transition: the observation to append (already wrapped in the chat template) unless the
	// episode is over, and the process reward earned by this turn.
	Step(ctx context.Context, turn string) (Transition, error)
	// Finish ends the episode (normally or because a limit cut it, truncated=true) and returns
	// its outcome: the outcome reward and the statistics the trainer logs.
	Finish(truncated bool) Outcome
}

// Transition is the environment's answer to one agent turn.
type Transition struct {
	Observation string // text to append to the context; ignored when Done
	Done        bool   // the episode is over (final answer, or a reply without a tool call)
	// Reward is the process reward for this turn, recorded as a tool call closing on the
	// turn's last token (mdp.ToolCall), where the trainer places it.
	Reward float64
	// ObservationTail is how many bytes at the end of Observation close it and must survive a
	// cut to Config.MaxObsTokens: the closing tag and the chat template's opening of the next
	// assistant turn (env.StepResult.ObservationTail). 0 lets a cut take the end too.
	ObservationTail int
}

// Outcome is how an episode ended.
type Outcome struct {
	Reward float64 // outcome reward (Agent-R1 Eq. 6 for QA), placed on the last agent token
	// Stats are per-episode numbers for logging and evaluation ("em", "f1", "format",
	// "searches", "tool_errors", ...); the rollout copies them without reading them.
	Stats map[string]float64
}

// Task is one prompt to roll out: its token ids and a constructor for a fresh episode (called
// once per sample of the group).
type Task struct {
	Prompt     []int          // prompt token ids, ending with the assistant header
	NewEpisode func() Episode // a fresh episode for one sample of this prompt
	Group      int            // group id written to each sample (GRPO/RLOO grouping)
}

// Result is one finished row of a rollout. What the agent did is its trajectory, in the
// paper's MDP form (mdp.Trajectory, embedded: the prompt, then each turn's action tokens
// exactly as sampled with their log-probs, the tool call closing the action with its process
// reward, the observation that followed; the outcome reward; the cut flags CutMaxLength and
// CutMaxTurns), the one representation the trainer flattens into its batch. The other fields
// are what only the rollout knows about the row.
type Result struct {
	mdp.Trajectory
	Group int // the task's group id
	Index int // the row in the batch (task index * n + sample index)
	// CutPrompt: the prompt alone had MaxLen tokens or more, so nothing was generated (the
	// episode was finished cut at once; CutMaxLength is set too).
	CutPrompt bool
	// CutTurnTokens: a turn hit MaxTurnTokens without a stop token (it was still handed to the
	// environment).
	CutTurnTokens bool
	// CutObservations counts the observations cut to MaxObsTokens (each shows the agent
	// ObsCutMarker); a cut observation does not truncate the episode.
	CutObservations int
	// Cuts says what each limit cut, in order, one message per event naming the limit, its
	// value and what exceeded it ("turn 2: observation of 240 tokens cut to MaxObsTokens 160"),
	// for logs and the run viewer. Empty when no limit acted.
	Cuts []string
	// Stats are the environment's per-episode numbers (Outcome.Stats), copied unread.
	Stats map[string]float64
}

// Truncated reports whether any limit cut the episode: the total length (CutMaxLength), the
// turn limit (CutMaxTurns) or the tokens of a turn (CutTurnTokens). A cut observation does
// not count.
func (r *Result) Truncated() bool { return r.CutMaxLength || r.CutMaxTurns || r.CutTurnTokens }

// cut records one limit's action in Cuts.
func (r *Result) cut(format string, args ...any) {
	r.Cuts = append(r.Cuts, fmt.Sprintf(format, args...))
}
