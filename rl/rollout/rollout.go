package rollout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// Config sets the limits and sampling of a rollout.
type Config struct {
	N             int    // samples per task: the GRPO group size (rows = tasks x N)
	MaxTurns      int    // agent turns per episode; a tool call in the last turn cuts the episode
	MaxTurnTokens int    // generated tokens per turn; a longer turn is handed to the env as is
	MaxLen        int    // tokens per row, prompt + response; the decoder must hold this many
	MaxObsTokens  int    // observation tokens kept (the tail is cut); 0 keeps all
	StopTokens    []int  // token ids that end a turn: `</tool_call>` and `<|im_end|>`
	Workers       int    // goroutines running environment steps; 0 means GOMAXPROCS
	Seed          uint64 // row r samples from the stream PCG(Seed, r)
}

// Validate reports the first invalid setting.
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
	case len(c.StopTokens) == 0:
		return errors.New("rollout: no StopTokens")
	}
	return nil
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
	sample     *Sample
	logits     []float32 // (V) next-token logits, copied out of the decoder
	cur        Segment   // the agent turn being generated
	active     bool
	pending    int  // the last sampled token, not yet fed to the decoder
	stopped    bool // the current turn ended with a stop token
	lengthCut  bool // the current turn ended at MaxLen without a stop token
	transition Transition
	stepErr    error
}

// Run rolls out every task N times on dec (which must have at least len(tasks)*N rows of
// capacity cfg.MaxLen) and returns the samples in row order: task i's samples are rows
// i*N ... i*N+N-1. Environment errors abort the rollout and are returned with the row.
func Run(ctx context.Context, dec Decoder, sampler Sampler, enc Encoder, tasks []Task, cfg Config) ([]*Sample, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	nrows := len(tasks) * cfg.N
	rows := make([]*row, nrows)
	for i := range rows {
		t := tasks[i/cfg.N]
		s := &Sample{Group: t.Group, Index: i, Prompt: slices.Clone(t.Prompt)}
		rows[i] = &row{
			rng:     rand.New(rand.NewPCG(cfg.Seed, uint64(i))),
			episode: t.NewEpisode(),
			sample:  s,
		}
		dec.Reset(i)
		if len(t.Prompt) == 0 {
			return nil, fmt.Errorf("rollout: task %d: empty prompt", i/cfg.N)
		}
		if len(t.Prompt) >= cfg.MaxLen {
			s.Truncated, s.CutLength = true, true
			s.Outcome = rows[i].episode.Finish(true)
			continue
		}
		// The samples of one task share the prompt: prefill it once and copy the cache when
		// the decoder can.
		if cp, ok := dec.(rowCopier); ok && i%cfg.N != 0 && rows[i-1].active {
			cp.CopyRow(i, i-1)
			rows[i].logits = slices.Clone(rows[i-1].logits)
		} else {
			rows[i].logits = slices.Clone(dec.Append(i, t.Prompt))
		}
		rows[i].active = true
	}

	var stepRows, stepToks, ended []int
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		stepRows, stepToks, ended = stepRows[:0], stepToks[:0], ended[:0]
		for i, r := range rows {
			if !r.active {
				continue
			}
			tok, lp := sampler.Sample(r.logits, r.rng)
			r.cur.Tokens = append(r.cur.Tokens, tok)
			r.cur.LogProbs = append(r.cur.LogProbs, lp)
			r.pending = tok
			length := dec.Len(i) + 1 // the cache plus the sampled token
			switch {
			case slices.Contains(cfg.StopTokens, tok):
				r.stopped, r.lengthCut = true, false
				ended = append(ended, i)
			case length >= cfg.MaxLen:
				r.stopped, r.lengthCut = false, true
				ended = append(ended, i)
			case len(r.cur.Tokens) >= cfg.MaxTurnTokens:
				r.stopped, r.lengthCut = false, false
				ended = append(ended, i)
			default:
				stepRows = append(stepRows, i)
				stepToks = append(stepToks, tok)
			}
		}
		if len(stepRows) > 0 {
			out := dec.Step(stepRows, stepToks)
			for j, i := range stepRows {
				rows[i].logits = append(rows[i].logits[:0], out[j]...)
			}
		}
		if len(ended) > 0 {
			if err := endTurns(ctx, dec, enc, rows, ended, cfg); err != nil {
				return nil, err
			}
		}
		if !anyActive(rows) {
			break
		}
	}
	out := make([]*Sample, nrows)
	for i, r := range rows {
		out[i] = r.sample
	}
	return out, nil
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
// concurrently, then (sequentially, the decoder being single-threaded) appends each
// continuing row's pending token and observation to its cache.
func endTurns(ctx context.Context, dec Decoder, enc Encoder, rows []*row, ended []int, cfg Config) error {
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Close the agent segment of every ended row.
	for _, i := range ended {
		r := rows[i]
		r.sample.Segments = append(r.sample.Segments, Segment{Tokens: r.cur.Tokens, LogProbs: r.cur.LogProbs, Agent: true})
		r.cur = Segment{}
		r.sample.Turns++
	}
	// Environment steps, concurrently; a turn cut by MaxLen is not stepped (its text is
	// incomplete and nothing could follow it).
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for _, i := range ended {
		r := rows[i]
		if r.lengthCut {
			continue
		}
		agent := r.sample.Segments[len(r.sample.Segments)-1]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r.transition, r.stepErr = r.episode.Step(ctx, enc.Decode(agent.Tokens))
		}()
	}
	wg.Wait()
	for _, i := range ended {
		r := rows[i]
		if r.stepErr != nil {
			return fmt.Errorf("rollout: row %d turn %d: %w", i, r.sample.Turns, r.stepErr)
		}
		last := &r.sample.Segments[len(r.sample.Segments)-1]
		if r.lengthCut {
			r.sample.CutLength = true
			finish(r)
			continue
		}
		last.Reward = r.transition.Reward
		// A turn without a stop token that hit MaxTurnTokens is flagged as cut.
		if !r.stopped {
			r.sample.CutTurnTokens = true
		}
		if r.transition.Done {
			finish(r)
			continue
		}
		if r.sample.Turns >= cfg.MaxTurns {
			r.sample.CutTurns = true
			finish(r)
			continue
		}
		obs := enc.Encode(r.transition.Observation)
		if cfg.MaxObsTokens > 0 && len(obs) > cfg.MaxObsTokens {
			obs = obs[:cfg.MaxObsTokens]
		}
		// The pending token and the observation must fit, with room for one generated token.
		if dec.Len(i)+1+len(obs)+1 > cfg.MaxLen {
			r.sample.CutLength = true
			finish(r)
			continue
		}
		feed := make([]int, 0, 1+len(obs))
		feed = append(feed, r.pending)
		feed = append(feed, obs...)
		r.logits = append(r.logits[:0], dec.Append(i, feed)...)
		if len(obs) > 0 {
			r.sample.Segments = append(r.sample.Segments, Segment{Tokens: obs})
		}
	}
	return nil
}

// finish ends row r's episode and records its outcome; the episode is told whether a limit
// cut it.
func finish(r *row) {
	r.active = false
	s := r.sample
	s.Truncated = s.CutLength || s.CutTurns || s.CutTurnTokens
	s.Outcome = r.episode.Finish(s.Truncated)
}
