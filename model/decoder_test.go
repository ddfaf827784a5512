package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"agentr1/tensor"
)

// fullLogits returns the logits (len(seq), V) of one unpadded sequence from ForwardLogits,
// run inside a left-padded batch of width T beside a filler row.
func fullLogits(t *testing.T, m *Model, seq []int, T int) []float32 {
	t.Helper()
	V := m.Config.VocabSize
	tokens := make([]int, 2*T)
	mask := make([]float32, 2*T)
	for i := range T {
		tokens[i] = i % V // filler row, all real
		mask[i] = 1
	}
	off := 2*T - len(seq)
	copy(tokens[off:], seq)
	for i := off; i < 2*T; i++ {
		mask[i] = 1
	}
	logits := m.ForwardLogits(NewWorkspace(), tokens, mask, 2, T)
	return append([]float32(nil), logits[off*V:]...)
}

// TestDecoderMatchesForward feeds rows of different lengths through the KV cache (prefill with
// Append, batched Steps over changing row sets, observations appended mid-sequence, a copied
// row) and checks the next-token logits after every token against a full forward pass.
func TestDecoderMatchesForward(t *testing.T) {
	for _, tied := range []bool{true, false} {
		name := map[bool]string{true: "tied", false: "untied"}[tied]
		t.Run(name, func(t *testing.T) {
			cfg := tinyConfig(tied)
			cfg.MaxPositionEmbeddings = 300
			m := newTestModel(t, cfg, 21)
			V := cfg.VocabSize
			rng := rand.New(rand.NewPCG(22, 22))
			const rows, maxLen = 4, 300
			d := m.NewDecoder(rows, maxLen)
			seqs := make([][]int, rows)
			got := make([][][]float32, rows) // got[r][i]: logits after token i of row r
			record := func(r int, logits []float32) {
				got[r] = append(got[r], append([]float32(nil), logits...))
			}
			feed := func(r int, toks []int) {
				// Append returns only the logits after the last token; the ones before are
				// recorded token by token through Append of a single token when len(toks) == 1.
				logits := d.Append(r, toks)
				for range len(toks) - 1 {
					got[r] = append(got[r], nil) // not observed
				}
				record(r, logits)
				seqs[r] = append(seqs[r], toks...)
			}
			randToks := func(n int) []int { return randomTokens(rng, V, n) }
			// Prompts of different lengths; row 3 longer than a prefill chunk.
			feed(0, randToks(5))
			feed(1, randToks(1))
			feed(2, randToks(9))
			feed(3, randToks(prefillChunk+17))
			step := func(rs []int) {
				toks := randomTokens(rng, V, len(rs))
				out := d.Step(rs, toks)
				for i, r := range rs {
					seqs[r] = append(seqs[r], toks[i])
					record(r, out[i])
				}
			}
			for range 6 {
				step([]int{0, 1, 2, 3})
			}
			feed(1, randToks(4)) // a tool observation mid-sequence
			step([]int{2, 1})
			step([]int{1, 0, 3})
			feed(0, randToks(3))
			d.CopyRow(2, 0)
			seqs[2] = append([]int(nil), seqs[0]...)
			got[2] = append([][]float32(nil), got[0]...)
			step([]int{0, 2})
			for range 3 {
				step([]int{3, 2, 1, 0})
			}
			for r := range rows {
				if d.Len(r) != len(seqs[r]) {
					t.Fatalf("%s: row %d: Len %d, fed %d tokens", name, r, d.Len(r), len(seqs[r]))
				}
				want := fullLogits(t, m, seqs[r], maxLen)
				checked := 0
				for i, g := range got[r] {
					if g == nil {
						continue
					}
					checked++
					for j := range V {
						w := want[i*V+j]
						if math.Abs(float64(g[j]-w)) > 1e-4*(1+math.Abs(float64(w))) {
							t.Fatalf("%s: row %d, after token %d: logit %d = %v, full forward %v", name, r, i, j, g[j], w)
						}
					}
				}
				if checked < 10 {
					t.Errorf("%s: row %d: only %d positions checked", name, r, checked)
				}
			}
			d.Reset(1)
			if d.Len(1) != 0 {
				t.Errorf("%s: Len after Reset = %d", name, d.Len(1))
			}
			out := d.Append(1, seqs[0][:3])
			want := fullLogits(t, m, seqs[0][:3], 8)
			for j := range V {
				if math.Abs(float64(out[j]-want[2*V+j])) > 1e-4*(1+math.Abs(float64(want[2*V+j]))) {
					t.Fatalf("%s: after Reset: logit %d = %v, want %v", name, j, out[j], want[2*V+j])
				}
			}
		})
	}
}

// TestSampledLogprobMatchesForward samples sequences at temperature 1 (with top-k and top-p
// filters, which must not change the recorded log-prob) and checks each recorded log-prob
// against the teacher-forced Forward within 1e-4: PPO's first ratio is 1 only if they agree.
func TestSampledLogprobMatchesForward(t *testing.T) {
	for _, s := range []Sampler{
		{Temperature: 1},
		{Temperature: 1, TopK: 5, TopP: 0.9},
	} {
		cfg := tinyConfig(true)
		m := newTestModel(t, cfg, 31)
		rng := rand.New(rand.NewPCG(32, 32))
		const rows, prompt, gen = 3, 4, 20
		T := prompt + gen
		d := m.NewDecoder(rows, T)
		seqs := make([][]int, rows)
		lps := make([][]float32, rows)
		logits := make([][]float32, rows)
		for r := range rows {
			seqs[r] = []int{rng.IntN(cfg.VocabSize), 2, 3, rng.IntN(cfg.VocabSize)}
			logits[r] = d.Append(r, seqs[r])
		}
		for range gen {
			rs, toks := []int{}, []int{}
			for r := range rows {
				tok, lp := s.Sample(logits[r], rng)
				seqs[r] = append(seqs[r], tok)
				lps[r] = append(lps[r], lp)
				rs, toks = append(rs, r), append(toks, tok)
			}
			out := d.Step(rs, toks)
			copy(logits, out)
		}
		tokens := make([]int, 0, rows*T)
		mask := make([]float32, rows*T)
		for r := range rows {
			tokens = append(tokens, seqs[r]...)
		}
		for i := range mask {
			mask[i] = 1
		}
		logp, _ := m.Forward(NewWorkspace(), tokens, mask, rows, T)
		for r := range rows {
			for i, lp := range lps[r] {
				want := logp[r*T+prompt+i]
				if math.Abs(float64(lp-want)) > 1e-4 {
					t.Errorf("sampler %+v: row %d, token %d: sampled logp %v, Forward %v", s, r, i, lp, want)
				}
			}
		}
	}
}

// TestGenerate checks that Generate stops rows at a stop token or maxNew, that its log-probs
// and tokens equal sampling by hand with Step, and that the rows stay usable afterwards.
func TestGenerate(t *testing.T) {
	cfg := tinyConfig(true)
	m := newTestModel(t, cfg, 71)
	s := Sampler{Temperature: 1}
	run := func(byHand bool) ([][]int, [][]float32) {
		d := m.NewDecoder(3, 40)
		rng := rand.New(rand.NewPCG(72, 72))
		for r := range 3 {
			d.Append(r, []int{r + 2, 5, 7})
		}
		stop := []int{3, 4}
		if !byHand {
			gens := d.Generate([]int{0, 1, 2}, 12, s, stop, rng)
			toks, lps := make([][]int, 3), make([][]float32, 3)
			for i, g := range gens {
				toks[i], lps[i] = g.Tokens, g.LogProbs
				last := g.Tokens[len(g.Tokens)-1]
				isStop := last == 3 || last == 4
				if g.Stopped != isStop || (!isStop && len(g.Tokens) != 12) || d.Len(i) != 3+len(g.Tokens) {
					t.Errorf("row %d: %d tokens ending %d, Stopped %v, Len %d", i, len(g.Tokens), last, g.Stopped, d.Len(i))
				}
			}
			return toks, lps
		}
		toks, lps := make([][]int, 3), make([][]float32, 3)
		done := make([]bool, 3)
		for range 12 {
			var rs, ts []int
			for r := range 3 {
				if done[r] {
					continue
				}
				tok, lp := s.Sample(d.logits[r*cfg.VocabSize:(r+1)*cfg.VocabSize], rng)
				toks[r] = append(toks[r], tok)
				lps[r] = append(lps[r], lp)
				done[r] = tok == 3 || tok == 4
				rs, ts = append(rs, r), append(ts, tok)
			}
			if len(rs) > 0 {
				d.Step(rs, ts)
			}
		}
		return toks, lps
	}
	gt, gl := run(false)
	ht, hl := run(true)
	for r := range 3 {
		if len(gt[r]) != len(ht[r]) {
			t.Fatalf("row %d: Generate gave %v, by hand %v", r, gt[r], ht[r])
		}
		for i := range gt[r] {
			if gt[r][i] != ht[r][i] || gl[r][i] != hl[r][i] {
				t.Fatalf("row %d token %d: Generate (%d, %v), by hand (%d, %v)", r, i, gt[r][i], gl[r][i], ht[r][i], hl[r][i])
			}
		}
	}
}

// TestDecoderShardedStep checks a Step of enough rows to be cut into shards (two, run at
// once): every row's logits, and its cache as the next Step reads it, agree with the same Steps
// uncut (one shard), and with a full Forward, to float32 rounding.
func TestDecoderShardedStep(t *testing.T) {
	cfg := tinyConfig(false)
	m := newTestModel(t, cfg, 81)
	rows, T := decodeShardMinRows+5, 12
	rng := rand.New(rand.NewPCG(82, 83))
	tokens := randomTokens(rng, cfg.VocabSize, rows*T)
	run := func(shards int) [][]float32 {
		defer SetShards(SetShards(shards))
		d := m.NewDecoder(rows, T)
		var got [][]float32
		for r := range rows {
			d.Append(r, tokens[r*T:r*T+3]) // a 3-token prompt each
		}
		all := make([]int, rows)
		for r := range all {
			all[r] = r
		}
		for t := 3; t < T; t++ {
			step := make([]int, rows)
			for r := range rows {
				step[r] = tokens[r*T+t]
			}
			for _, l := range d.Step(all, step) {
				got = append(got, append([]float32(nil), l...))
			}
		}
		return got
	}
	one, two := run(1), run(2)
	logits := m.ForwardLogits(NewWorkspace(), tokens, ones(rows*T), rows, T) // (rows, T, V)
	V := cfg.VocabSize
	for i := range one {
		t0, r := 3+i/rows, i%rows
		want := logits[(r*T+t0)*V : (r*T+t0+1)*V]
		for j := range V {
			if d := math.Abs(float64(two[i][j] - one[i][j])); d > 1e-5 {
				t.Fatalf("row %d after token %d: logit %d in 2 shards %v, uncut %v", r, t0, j, two[i][j], one[i][j])
			}
			if d := math.Abs(float64(two[i][j] - want[j])); d > 1e-4 {
				t.Fatalf("row %d after token %d: logit %d decoded %v, Forward %v", r, t0, j, two[i][j], want[j])
			}
		}
	}
}

// ones returns n ones (an attention mask without padding).
func ones(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// TestDecoderQwen3 checks the KV-cache decoder on Qwen3 models, a tiny random one and the
// qwen3_tiny checkpoint folder: after a prefill, batched Steps and an observation appended
// mid-sequence, every row's next-token logits equal a full forward pass's.
func TestDecoderQwen3(t *testing.T) {
	folder, err := Load("../testdata/golden/qwen3_tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    *Model
	}{{"tiny", newTestModel(t, tinyQwen3Config(false), 51)}, {"folder", folder}} {
		m := tc.m
		if !m.Config.QKNorm() || m.Param("model.layers.0.self_attn.q_norm.weight") == nil {
			t.Fatalf("%s: not a Qwen3 model: %+v", tc.name, m.Config)
		}
		V := m.Config.VocabSize
		rng := rand.New(rand.NewPCG(52, 52))
		const rows, maxLen = 3, 40
		d := m.NewDecoder(rows, maxLen)
		seqs := make([][]int, rows)
		type seen struct {
			row, at int // the logits after token at of row
			logits  []float32
		}
		var got []seen
		append1 := func(r int, toks []int) {
			out := d.Append(r, toks)
			seqs[r] = append(seqs[r], toks...)
			got = append(got, seen{r, len(seqs[r]) - 1, append([]float32(nil), out...)})
		}
		for r := range rows {
			append1(r, randomTokens(rng, V, 3+4*r))
		}
		for s := range 8 {
			rs := []int{0, 1, 2}
			if s == 4 {
				append1(1, randomTokens(rng, V, 5)) // a tool observation mid-sequence
				rs = []int{2, 0}
			}
			toks := randomTokens(rng, V, len(rs))
			for i, out := range d.Step(rs, toks) {
				seqs[rs[i]] = append(seqs[rs[i]], toks[i])
				got = append(got, seen{rs[i], len(seqs[rs[i]]) - 1, append([]float32(nil), out...)})
			}
		}
		want := make([][]float32, rows)
		for r := range rows {
			want[r] = fullLogits(t, m, seqs[r], maxLen)
		}
		for _, g := range got {
			for j := range V {
				w := want[g.row][g.at*V+j]
				if math.Abs(float64(g.logits[j]-w)) > 1e-4*(1+math.Abs(float64(w))) {
					t.Fatalf("%s: row %d, after token %d: logit %d = %v, full forward %v", tc.name, g.row, g.at, j, g.logits[j], w)
				}
			}
		}
	}
}

// TestDecoderAppendRows checks that feeding several rows at once gives each row what Append
// gives it, bit for bit: the logits after the feed, and the cache as a Step after it reads
// it. The model has the default run's shapes (hidden 128, four heads of 32, two key/value
// heads, SwiGLU 384, vocabulary 768), so that one row's products are large enough for Append
// to split them across two workers where AppendRows runs each row on one; the feeds are
// empty, one token, and just under, at and over prefillChunk.
func TestDecoderAppendRows(t *testing.T) {
	defer tensor.SetWorkers(tensor.SetWorkers(2))
	cfg := tinyConfig(true)
	cfg.VocabSize, cfg.HiddenSize, cfg.IntermediateSize = 768, 128, 384
	cfg.NumHiddenLayers, cfg.MaxPositionEmbeddings = 2, 512
	m := newTestModel(t, cfg, 91)
	rng := rand.New(rand.NewPCG(92, 93))
	lens := []int{0, 1, prefillChunk - 1, prefillChunk, prefillChunk + 1, 300}
	rows := make([]int, len(lens))
	feeds := make([][]int, len(lens))
	prompts := make([][]int, len(lens))
	for i, n := range lens {
		rows[i] = len(lens) - 1 - i // rows listed out of order
		feeds[i] = randomTokens(rng, cfg.VocabSize, n)
		prompts[i] = randomTokens(rng, cfg.VocabSize, 5+i)
	}
	next := randomTokens(rng, cfg.VocabSize, len(rows))
	// run prefills each row's prompt, feeds the rows their feeds (at once or one by one), then
	// steps every row once; it returns the logits after the feeds and after the step.
	run := func(atOnce bool) (fed, stepped [][]float32) {
		d := m.NewDecoder(len(rows), 400)
		for i, r := range rows {
			d.Append(r, prompts[i])
		}
		if atOnce {
			for _, l := range d.AppendRows(rows, feeds) {
				fed = append(fed, slices.Clone(l))
			}
		} else {
			for i, r := range rows {
				fed = append(fed, slices.Clone(d.Append(r, feeds[i])))
			}
		}
		for _, l := range d.Step(rows, next) {
			stepped = append(stepped, slices.Clone(l))
		}
		return fed, stepped
	}
	wantFed, wantStepped := run(false)
	gotFed, gotStepped := run(true)
	for i, r := range rows {
		if !slices.Equal(gotFed[i], wantFed[i]) {
			t.Errorf("row %d fed %d tokens: AppendRows' logits differ from Append's", r, lens[i])
		}
		if !slices.Equal(gotStepped[i], wantStepped[i]) {
			t.Errorf("row %d fed %d tokens: the Step after AppendRows differs from the Step after Append", r, lens[i])
		}
	}
}

// TestDecoderAppendRowsRefuses checks AppendRows' panics: lists of different lengths, a row
// listed twice, a feed past MaxLen.
func TestDecoderAppendRowsRefuses(t *testing.T) {
	m := newTestModel(t, tinyConfig(false), 94)
	for _, c := range []struct {
		name  string
		rows  []int
		feeds [][]int
		want  string
	}{
		{"lengths", []int{0, 1}, [][]int{{2}}, "2 rows and 1 feeds"},
		{"twice", []int{1, 1}, [][]int{{2}, {3}}, "row 1 listed twice"},
		{"full", []int{0}, [][]int{make([]int, 9)}, "exceed MaxLen 8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, c.want) {
					t.Fatalf("panic %q, want one containing %q", msg, c.want)
				}
			}()
			m.NewDecoder(2, 8).AppendRows(c.rows, c.feeds)
		})
	}
}
