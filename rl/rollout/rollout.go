package rollout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"agentr1/mdp"
)

// Config sets the limits and sampling of a rollout.
type Config struct {
	N             int // samples per task: the GRPO group size (rows = tasks x N)
	MaxTurns      int // agent turns per episode; a tool call in the last turn cuts the episode
	MaxTurnTokens int // generated tokens per turn; a longer turn is handed to the env as is
	// MaxLen is the tokens per row, prompt + response; the decoder must hold this many. A row
	// reaching MaxLen is cut (Result.CutMaxLength). A prompt of MaxLen tokens or more leaves no
	// room for a response: its row is cut before generating (CutPrompt), or the rollout is
	// refused if RefuseLongPrompts.
	MaxLen int
	// RefuseLongPrompts makes a prompt of MaxLen tokens or more an error of Run, as verl
	// refuses a prompt over max_prompt_length (RLHFDataset, truncation="error"), instead of a
	// row cut before generating.
	RefuseLongPrompts bool
	// MaxObsTokens is the most tokens of one observation appended; a longer one keeps its
	// head, ObsCutMarker and its Transition.ObservationTail (see EncodeObservation). 0 keeps all.
	MaxObsTokens int
	StopTokens   []int // token ids that end a turn: `</tool_call>` and `<|im_end|>`
	// ToolEnd is the stop token that closes a tool call (`</tool_call>`): a turn ending with it
	// records an mdp.ToolCall on that token, carrying the turn's process reward.
	ToolEnd int
	Workers int    // goroutines running environment steps; 0 means GOMAXPROCS
	Seed    uint64 // row r samples from the stream PCG(Seed, r)
}

// Validate reports the first invalid setting, naming the field.
func (c *Config) Validate() error {
	switch {
	case c.N < 1:
		return fmt.Errorf("rollout: N = %d, want >= 1", c.N)
	case c.MaxTurns < 1:
		return fmt.Errorf("rollout: MaxTurns = %d, want >= 1", c.MaxTurns)
	case c.MaxTurnTokens < 1:
		return fmt.Errorf("rollout: MaxTurnTokens = %d, want >= 1", c.MaxTurnTokens)
	case c.MaxLen < 2:
		return fmt.Errorf("rollout: MaxLen = %d, want >= 2", c.MaxLen)
	case c.MaxObsTokens < 0:
		return fmt.Errorf("rollout: MaxObsTokens = %d, want >= 0 (0 keeps every token)", c.MaxObsTokens)
	case c.Workers < 0:
		return fmt.Errorf("rollout: Workers = %d, want >= 0 (0 means GOMAXPROCS)", c.Workers)
	case len(c.StopTokens) == 0:
		return errors.New("rollout: no StopTokens")
	case !slices.Contains(c.StopTokens, c.ToolEnd):
		return fmt.Errorf("rollout: ToolEnd %d is not one of StopTokens %v", c.ToolEnd, c.StopTokens)
	}
	return nil
}

// sizedDecoder is implemented by decoders with a fixed capacity (model.Decoder): rows, and
// tokens per row (at most the model's max_position_embeddings).
type sizedDecoder interface {
	Rows() int
	MaxLen() int
}

// checkFits refuses a rollout the decoder cannot hold, an empty prompt and, with
// RefuseLongPrompts, a prompt that leaves no room for a response.
func checkFits(dec Decoder, tasks []Task, cfg Config) error {
	if d, ok := dec.(sizedDecoder); ok {
		if rows := len(tasks) * cfg.N; rows > d.Rows() {
			return fmt.Errorf("rollout: %d tasks x N %d = %d rows, the decoder holds %d", len(tasks), cfg.N, rows, d.Rows())
		}
		if cfg.MaxLen > d.MaxLen() {
			return fmt.Errorf("rollout: MaxLen %d exceeds the decoder's %d tokens per row (the model's positions)", cfg.MaxLen, d.MaxLen())
		}
	}
	for i, t := range tasks {
		switch {
		case len(t.Prompt) == 0:
			return fmt.Errorf("rollout: task %d: empty prompt", i)
		case cfg.RefuseLongPrompts && len(t.Prompt) >= cfg.MaxLen:
			return fmt.Errorf("rollout: task %d: %s", i, longPrompt(len(t.Prompt), cfg.MaxLen))
		}
	}
	return nil
}

// longPrompt is the message of a prompt that leaves no room for a response.
func longPrompt(n, maxLen int) string {
	return fmt.Sprintf("prompt of %d tokens leaves no room for a response: MaxLen is %d tokens, prompt + response", n, maxLen)
}

// rowsAppender is implemented by decoders that can feed several rows at once
// (model.Decoder.AppendRows), which spreads a rollout's observations over the cores.
type rowsAppender interface {
	AppendRows(rows []int, feeds [][]int) [][]float32
}

// appendRows feeds feeds[i] to row rows[i] for every i, at once when dec can, and hands each
// row's next-token logits to keep(i, logits), a view that keep must copy from: the decoder may
// reuse it once it is fed again.
func appendRows(dec Decoder, rows []int, feeds [][]int, keep func(i int, logits []float32)) {
	if a, ok := dec.(rowsAppender); ok {
		for i, logits := range a.AppendRows(rows, feeds) {
			keep(i, logits)
		}
		return
	}
	for i, r := range rows {
		keep(i, dec.Append(r, feeds[i]))
	}
}

// rowCopier is implemented by decoders that can copy one row's cache into another
// (model.Decoder.CopyRow), which saves prefilling a group's shared prompt N times.
type rowCopier interface {
	CopyRow(dst, src int)
}

// row is the generation state of one row.
type row struct {
	rng        *rand.Rand
	episode    Episode
	result     *Result
	logits     []float32 // (V) next-token logits, copied out of the decoder
	cur        mdp.Turn  // the agent turn being generated: its action and log-probs so far
	active     bool
	pending    int  // the last sampled token, not yet fed to the decoder
	stopped    bool // the current turn ended with a stop token
	lengthCut  bool // the current turn ended at MaxLen without a stop token
	transition Transition
	stepErr    error
}

// Run rolls out every task N times on dec (which must have at least len(tasks)*N rows of
// capacity cfg.MaxLen) and returns the results in row order: task i's samples are rows
// i*N ... i*N+N-1. It refuses, before generating anything, a config Validate rejects, a
// decoder too small for the rows or MaxLen (when dec reports its size, as model.Decoder does),
// an empty prompt, and with RefuseLongPrompts a prompt of MaxLen tokens or more (otherwise
// that row is cut before generating: CutPrompt). Environment errors abort the rollout and are
// returned with the row.
func Run(ctx context.Context, dec Decoder, sampler Sampler, enc Encoder, tasks []Task, cfg Config) ([]*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkFits(dec, tasks, cfg); err != nil {
		return nil, err
	}
	rows := prefill(dec, tasks, cfg)
	if err := generate(ctx, dec, sampler, enc, rows, cfg); err != nil {
		return nil, err
	}
	out := make([]*Result, len(rows))
	for i, r := range rows {
		out[i] = r.result
	}
	return out, nil
}

// prefill starts the rows, len(tasks)*N of them, task i's samples being rows i*N ... i*N+N-1,
// and feeds each row's prompt to its cache in dec, leaving the next-token logits in the row.
// A row whose prompt leaves no room for a response is finished at once, cut (CutPrompt).
func prefill(dec Decoder, tasks []Task, cfg Config) []*row {
	rows := make([]*row, len(tasks)*cfg.N)
	cp, copies := dec.(rowCopier)
	var lead []int      // the rows that prefill their prompt
	var prompts [][]int // and the prompt of each
	for i := range rows {
		t := tasks[i/cfg.N]
		res := &Result{Group: t.Group, Index: i, Trajectory: mdp.Trajectory{Prompt: slices.Clone(t.Prompt)}}
		rows[i] = &row{
			rng:     rand.New(rand.NewPCG(cfg.Seed, uint64(i))),
			episode: t.NewEpisode(),
			result:  res,
		}
		dec.Reset(i)
		if len(t.Prompt) >= cfg.MaxLen {
			res.CutPrompt, res.CutMaxLength = true, true
			res.cut("%s", longPrompt(len(t.Prompt), cfg.MaxLen))
			finish(rows[i])
			continue
		}
		rows[i].active = true
		// The samples of one task share the prompt: prefill it once and copy the cache when
		// the decoder can (below).
		if !copies || i%cfg.N == 0 {
			lead, prompts = append(lead, i), append(prompts, t.Prompt)
		}
	}
	appendRows(dec, lead, prompts, func(j int, logits []float32) {
		rows[lead[j]].logits = slices.Clone(logits)
	})
	if copies {
		for i, r := range rows {
			// The first of the task's rows prefilled the prompt they share (so they are
			// all active or all cut): copy its cache, in any order of the rows.
			if first := i - i%cfg.N; r.active && i != first {
				cp.CopyRow(i, first)
				r.logits = slices.Clone(rows[first].logits)
			}
		}
	}
	return rows
}

// generate runs the rows' episodes to their end: each step samples a token for every active
// row (sampleTokens) and feeds it back to dec, and the rows whose turn ended hand it to their
// environment (endTurns), until no row is active. It stops at ctx's cancellation, checked
// before each step.
func generate(ctx context.Context, dec Decoder, sampler Sampler, enc Encoder, rows []*row, cfg Config) error {
	var stepRows, stepToks, ended []int
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		stepRows, stepToks, ended = sampleTokens(dec, sampler, rows, cfg, stepRows[:0], stepToks[:0], ended[:0])
		if len(stepRows) > 0 {
			out := dec.Step(stepRows, stepToks)
			for j, i := range stepRows {
				rows[i].logits = append(rows[i].logits[:0], out[j]...)
			}
		}
		if len(ended) > 0 {
			if err := endTurns(ctx, dec, enc, rows, ended, cfg); err != nil {
				return err
			}
		}
		if !anyActive(rows) {
			return nil
		}
	}
}

// sampleTokens samples the next token of every active row from its logits, adds it to the
// row's turn, and sorts the rows it appends to: stepRows, those whose turn goes on, each to be
// fed stepToks' token, and ended, those whose turn the token ended (a stop token, MaxLen or
// MaxTurnTokens), the token left pending.
func sampleTokens(dec Decoder, sampler Sampler, rows []*row, cfg Config, stepRows, stepToks, ended []int) ([]int, []int, []int) {
	for i, r := range rows {
		if !r.active {
			continue
		}
		tok, lp := sampler.Sample(r.logits, r.rng)
		r.cur.Action = append(r.cur.Action, tok)
		r.cur.ActionLogProbs = append(r.cur.ActionLogProbs, lp)
		r.pending = tok
		length := dec.Len(i) + 1 // the cache plus the sampled token
		switch {
		case slices.Contains(cfg.StopTokens, tok):
			r.stopped, r.lengthCut = true, false
			ended = append(ended, i)
		case length >= cfg.MaxLen:
			r.stopped, r.lengthCut = false, true
			ended = append(ended, i)
		case len(r.cur.Action) >= cfg.MaxTurnTokens:
			r.stopped, r.lengthCut = false, false
			ended = append(ended, i)
		default:
			stepRows = append(stepRows, i)
			stepToks = append(stepToks, tok)
		}
	}
	return stepRows, stepToks, ended
}

func anyActive(rows []*row) bool {
	for _, r := range rows {
		if r.active {
			return true
		}
	}
	return false
}

// endTurns closes the current turn of each row in ended: it runs the environment steps
// concurrently, then appends each continuing row's pending token and observation to its
// cache, all rows in one call (appendRows).
func endTurns(ctx context.Context, dec Decoder, enc Encoder, rows []*row, ended []int, cfg Config) error {
	// Close the agent turn of every ended row.
	for _, i := range ended {
		r := rows[i]
		r.result.Turns = append(r.result.Turns, r.cur)
		r.cur = mdp.Turn{}
	}
	stepEpisodes(ctx, enc, rows, ended, cfg.Workers)
	var fed []int     // the rows that go on to another turn
	var feeds [][]int // and what each is fed: its pending token and the observation
	for _, i := range ended {
		feed, err := nextTurnFeed(dec, enc, rows[i], i, cfg)
		if err != nil {
			return err
		}
		if feed != nil {
			fed, feeds = append(fed, i), append(feeds, feed)
		}
	}
	appendRows(dec, fed, feeds, func(j int, logits []float32) {
		r := rows[fed[j]]
		r.logits = append(r.logits[:0], logits...)
	})
	return nil
}

// stepEpisodes hands the closed turn of each row in ended to its episode, on up to workers
// goroutines (0: GOMAXPROCS), and keeps each row's transition and error in the row. A turn cut
// by MaxLen is not stepped: its text is incomplete and nothing could follow it.
func stepEpisodes(ctx context.Context, enc Encoder, rows []*row, ended []int, workers int) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for _, i := range ended {
		r := rows[i]
		if r.lengthCut {
			continue
		}
		action := r.result.Turns[len(r.result.Turns)-1].Action
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r.transition, r.stepErr = r.episode.Step(ctx, enc.Decode(action))
		}()
	}
	wg.Wait()
}

// nextTurnFeed settles row r (row i) once its turn was stepped: it records the turn's tool
// call and the limits that cut it, and returns what the row is fed for its next turn (its
// pending token, then the observation's tokens), or nil when the episode is over (finish): the
// environment is done, or MaxLen or MaxTurns ends it. An environment error, or an observation
// that does not encode, is returned with the row and turn.
func nextTurnFeed(dec Decoder, enc Encoder, r *row, i int, cfg Config) ([]int, error) {
	s, turn := r.result, len(r.result.Turns)
	if r.stepErr != nil {
		return nil, fmt.Errorf("rollout: row %d turn %d: %w", i, turn, r.stepErr)
	}
	last := &s.Turns[turn-1]
	if r.lengthCut {
		s.CutMaxLength = true
		s.cut("turn %d: prompt and response reached MaxLen %d tokens while generating", turn, cfg.MaxLen)
		finish(r)
		return nil, nil
	}
	recordToolCall(last, r.transition.Reward, cfg.ToolEnd)
	// A turn without a stop token that hit MaxTurnTokens is flagged as cut.
	if !r.stopped {
		s.CutTurnTokens = true
		s.cut("turn %d: %d tokens generated without a stop token: MaxTurnTokens is %d", turn, len(last.Action), cfg.MaxTurnTokens)
	}
	if r.transition.Done {
		finish(r)
		return nil, nil
	}
	if turn >= cfg.MaxTurns {
		s.CutMaxTurns = true
		s.cut("turn %d still called a tool: MaxTurns is %d", turn, cfg.MaxTurns)
		finish(r)
		return nil, nil
	}
	obs, whole, err := EncodeObservation(enc, r.transition.Observation, r.transition.ObservationTail, cfg.MaxObsTokens)
	if err != nil {
		return nil, fmt.Errorf("rollout: row %d turn %d: %w", i, turn, err)
	}
	// The pending token and the observation must fit, with room for one generated token.
	if used := dec.Len(i) + 1; used+len(obs)+1 > cfg.MaxLen {
		s.CutMaxLength = true
		s.cut("turn %d: observation of %d tokens does not fit: %d of MaxLen %d tokens used, one must stay for the next turn",
			turn, len(obs), used, cfg.MaxLen)
		finish(r)
		return nil, nil
	}
	feed := make([]int, 0, 1+len(obs))
	feed = append(feed, r.pending)
	feed = append(feed, obs...)
	if len(obs) > 0 {
		last.Observation = obs
	}
	if cfg.MaxObsTokens > 0 && whole > cfg.MaxObsTokens {
		s.CutObservations++
		s.cut("turn %d: observation of %d tokens cut to MaxObsTokens %d", turn, whole, cfg.MaxObsTokens)
	}
	return feed, nil
}

// recordToolCall records the tool call a turn's action closed: on its last token, when that
// token is toolEnd or the environment paid a process reward for the turn (so no reward is lost
// when a turn without `</tool_call>` earns one), with that reward.
func recordToolCall(turn *mdp.Turn, reward float64, toolEnd int) {
	if n := len(turn.Action); n > 0 && (turn.Action[n-1] == toolEnd || reward != 0) {
		turn.ToolCalls = []mdp.ToolCall{{End: n - 1, Reward: reward}}
	}
}

// finish ends row r's episode and records its outcome reward and statistics; the episode is
// told whether a limit cut it.
func finish(r *row) {
	r.active = false
	res := r.result
	out := r.episode.Finish(res.Truncated())
	res.OutcomeReward, res.Stats = out.Reward, out.Stats
}
