package trainer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentr1/mdp"
	"agentr1/rl"
	"agentr1/rl/rollout"
)

func TestScheduleLR(t *testing.T) {
	cases := []struct {
		name string
		s    Schedule
		step int
		want float64
	}{
		{"warmup first step", Schedule{Peak: 1, Warmup: 4, Total: 14, Decay: "cosine"}, 0, 0.25},
		{"warmup last step", Schedule{Peak: 1, Warmup: 4, Total: 14, Decay: "cosine"}, 3, 1},
		{"cosine start", Schedule{Peak: 1, Warmup: 4, Total: 14, Decay: "cosine"}, 4, 1},
		{"cosine middle", Schedule{Peak: 1, Warmup: 4, Total: 14, Decay: "cosine"}, 9, 0.5},
		{"cosine end with floor", Schedule{Peak: 2, Warmup: 0, Total: 10, Decay: "cosine", MinRatio: 0.1}, 10, 0.2},
		{"linear middle with floor", Schedule{Peak: 1, Warmup: 0, Total: 10, Decay: "linear", MinRatio: 0.5}, 5, 0.75},
		{"past the end", Schedule{Peak: 1, Warmup: 0, Total: 10, Decay: "linear"}, 20, 0},
		{"constant", Schedule{Peak: 3, Warmup: 0, Total: 10, Decay: "constant"}, 7, 3},
	}
	for _, tc := range cases {
		if got := tc.s.LR(tc.step); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: LR(%d) = %g, want %g", tc.name, tc.step, got, tc.want)
		}
	}
	if err := (Schedule{Decay: "exp"}).Validate(); err == nil {
		t.Errorf("unknown decay accepted")
	}
}

func TestCheckpointFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.ckpt")
	in := &CheckpointFile{Step: 7, Meta: json.RawMessage(`{"x":1}`), Tensors: []NamedTensor{
		{Name: "w", Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, float32(math.Inf(1))}},
		{Name: "b", Shape: []int{1}, Data: []float32{-0.5}},
		{Name: "long", Shape: []int{70001}, Data: make([]float32, 70001)}, // over one chunk of the streamed write and read
	}}
	for i := range in.Tensors[2].Data {
		in.Tensors[2].Data[i] = float32(i) / 3
	}
	if err := WriteCheckpointFile(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadCheckpointFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if out.Step != 7 || string(out.Meta) != `{"x":1}` || len(out.Tensors) != 3 {
		t.Fatalf("round trip: got step %d meta %s, %d tensors", out.Step, out.Meta, len(out.Tensors))
	}
	for i := range in.Tensors {
		if !slices.Equal(in.Tensors[i].Data, out.Tensors[i].Data) || !slices.Equal(in.Tensors[i].Shape, out.Tensors[i].Shape) {
			t.Errorf("tensor %s differs after the round trip", in.Tensors[i].Name)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	raw, _ := os.ReadFile(path)
	damage := []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"flipped data byte", func(b []byte) []byte { b[len(b)-40] ^= 1; return b }, "checksum"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-5] }, "checksum"},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }, "magic"},
	}
	for _, d := range damage {
		p := filepath.Join(dir, "bad.ckpt")
		os.WriteFile(p, d.edit(slices.Clone(raw)), 0o644)
		if _, err := ReadCheckpointFile(p); err == nil || !strings.Contains(err.Error(), d.want) {
			t.Errorf("%s: error %v, want one mentioning %q", d.name, err, d.want)
		}
	}
	// A header whose tensor would not fit in the file, with a valid checksum: its size
	// (2^62 floats, 2^64 bytes) overflows int64 when counted in bytes.
	header := []byte(`{"step":0,"tensors":[{"name":"w","shape":[4611686018427387904]}]}`)
	huge := binary.LittleEndian.AppendUint64([]byte(checkpointMagic), uint64(len(header)))
	huge = append(huge, header...)
	sum := sha256.Sum256(huge)
	p := filepath.Join(dir, "huge.ckpt")
	os.WriteFile(p, append(huge, sum[:]...), 0o644)
	if _, err := ReadCheckpointFile(p); err == nil || !strings.Contains(err.Error(), "past end of file") {
		t.Errorf("oversized tensor: error %v, want one mentioning %q", err, "past end of file")
	}
	bad := &CheckpointFile{Tensors: []NamedTensor{{Name: "w", Shape: []int{2}, Data: []float32{1}}}}
	if err := WriteCheckpointFile(filepath.Join(dir, "c.ckpt"), bad); err == nil {
		t.Errorf("shape/data mismatch written without error")
	}
	if _, err := LatestCheckpoint(t.TempDir()); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("empty directory: %v, want ErrNoCheckpoint", err)
	}
}

// TestPreviousCheckpoint checks that the checkpoints before one are looked for among those of
// its own kind (RL "step-" or SFT "sft-"), the nearest lower step first, and that
// LatestCheckpoint sees only the RL ones.
func TestPreviousCheckpoint(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"step-000002.ckpt", "step-000005.ckpt", "sft-000003.ckpt", "sft-000004.ckpt", "sft-000004.ckpt.damaged", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ of, want string }{
		{"step-000005.ckpt", "step-000002.ckpt"},
		{"step-000002.ckpt", ""},
		{"sft-000004.ckpt", "sft-000003.ckpt"},
		{"sft-000003.ckpt", ""},
	} {
		got, err := PreviousCheckpoint(filepath.Join(dir, c.of))
		switch {
		case c.want == "" && !errors.Is(err, ErrNoCheckpoint):
			t.Errorf("before %s: %q, %v; want ErrNoCheckpoint", c.of, got, err)
		case c.want != "" && (err != nil || got != filepath.Join(dir, c.want)):
			t.Errorf("before %s: %q, %v; want %s", c.of, got, err, c.want)
		}
	}
	if _, err := PreviousCheckpoint(filepath.Join(dir, "notes.txt")); err == nil {
		t.Errorf("before notes.txt: no error, want one saying it is not a checkpoint")
	}
	if got, err := LatestCheckpoint(dir); err != nil || filepath.Base(got) != "step-000005.ckpt" {
		t.Errorf("LatestCheckpoint = %q, %v; want step-000005.ckpt", got, err)
	}
}

func TestParseAlgorithm(t *testing.T) {
	cases := map[string]Algorithm{
		"ppo": PPO, "GRPO": GRPO, "dr_grpo": DrGRPO, "reinforce_plus_plus": ReinforcePP,
		"reinforce_plus_plus_baseline": ReinforcePPBase, "rloo": RLOO, "remax": ReMax,
	}
	for in, want := range cases {
		if got, err := ParseAlgorithm(in); err != nil || got != want {
			t.Errorf("ParseAlgorithm(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseAlgorithm("dpo"); err == nil {
		t.Errorf("ParseAlgorithm(dpo) accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, a := range Algorithms {
		c := DefaultRLConfig(a)
		if err := c.Validate(); err != nil {
			t.Errorf("%s defaults invalid: %v", a, err)
		}
	}
	bad := []struct {
		name string
		edit func(*RLConfig)
	}{
		{"grpo without a group", func(c *RLConfig) { c.N = 1 }},
		{"unknown agg mode", func(c *RLConfig) { c.AggMode = "mean" }},
		{"unknown kl estimator", func(c *RLConfig) { c.KLEstimator = rl.KLEstimator(9) }},
		{"kl placement", func(c *RLConfig) { c.KLPlacement = "both" }},
		{"dual clip", func(c *RLConfig) { c.ClipC = 1 }},
		{"more mini-batches than rows", func(c *RLConfig) { c.MiniBatches = 1000 }},
		{"zero temperature", func(c *RLConfig) { c.Temperature = 0 }},
	}
	for _, b := range bad {
		c := DefaultRLConfig(GRPO)
		b.edit(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", b.name)
		}
	}
	c := DefaultRLConfig(PPO)
	c.KLCoef = 0.001
	if c.KLMode() != "reward" {
		t.Errorf("ppo KL placement %q, want reward", c.KLMode())
	}
	c.KLCoef = 0
	if c.KLMode() != "none" {
		t.Errorf("KLCoef 0: placement %q, want none", c.KLMode())
	}
}

func TestNumJSON(t *testing.T) {
	b, err := json.Marshal(struct{ A, B, C Num }{Num(math.NaN()), Num(math.Inf(1)), 0.25})
	if err != nil || string(b) != `{"A":null,"B":null,"C":0.25}` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	var n Num
	if err := json.Unmarshal([]byte("null"), &n); err != nil || !math.IsNaN(float64(n)) {
		t.Errorf("Unmarshal(null) = %v, %v", n, err)
	}
}

// TestView checks the column bookkeeping between the collated batch, a trimmed view and the
// model's (B, T) inputs and outputs.
func TestView(t *testing.T) {
	rows := []mdp.Row{
		mustFlatten(t, &mdp.Trajectory{Prompt: []int{1, 2, 3}, Turns: []mdp.Turn{{Action: []int{4, 5}, ActionLogProbs: []float32{-1, -2}, Observation: []int{6}}, {Action: []int{7}, ActionLogProbs: []float32{-3}}}}),
		mustFlatten(t, &mdp.Trajectory{Prompt: []int{1}, Turns: []mdp.Turn{{Action: []int{8}, ActionLogProbs: []float32{-4}}}}),
		mustFlatten(t, &mdp.Trajectory{Prompt: []int{1, 2}, Turns: []mdp.Turn{{Action: []int{9, 10}, ActionLogProbs: []float32{-5, -6}}}}),
	}
	b := mdp.Collate(rows, 0) // P = 3, L = 4
	v := NewView(b, []int{1, 2})
	if v.P != 2 || v.L != 2 || v.T != 4 {
		t.Fatalf("view of rows 1, 2: P %d L %d T %d, want 2 2 4", v.P, v.L, v.T)
	}
	if want := []int{0, 1, 8, 0, 1, 2, 9, 10}; !slices.Equal(v.Tokens, want) {
		t.Errorf("view tokens %v, want %v", v.Tokens, want)
	}
	// A fake forward output holding its own column index: response token j reads column P+j.
	out := make([]float32, v.B*v.T)
	for i := range out {
		out[i] = float32(i % v.T)
	}
	if got := v.ResponseColumns(out).Data; !slices.Equal(got, []float64{2, 3, 2, 3}) {
		t.Errorf("ResponseColumns %v, want columns P+j", got)
	}
	if got := v.ResponseValues(out).Data; !slices.Equal(got, []float64{1, 2, 1, 2}) {
		t.Errorf("ResponseValues %v, want columns P+j-1", got)
	}
	g := rl.MatrixOf(2, 2, []float64{1, 2, 3, 4})
	if got := v.TokenGrad(g); !slices.Equal(got, []float32{0, 0, 1, 2, 0, 0, 3, 4}) {
		t.Errorf("TokenGrad %v", got)
	}
	if got := v.ValueGrad(g); !slices.Equal(got, []float32{0, 1, 2, 0, 0, 3, 4, 0}) {
		t.Errorf("ValueGrad %v", got)
	}
	full := make([]float64, b.B*b.L)
	v.Scatter(full, g)
	if got := v.Gather(full).Data; !slices.Equal(got, g.Data) {
		t.Errorf("gather(scatter(g)) = %v, want %v", got, g.Data)
	}
	if got := NewView(b, []int{0}).Gather(b.ActionMask).Data; !slices.Equal(got, []float64{1, 1, 0, 1}) {
		t.Errorf("row 0 action mask %v, want [1 1 0 1]", got)
	}
}

func mustFlatten(t *testing.T, tr *mdp.Trajectory) mdp.Row {
	t.Helper()
	r, err := mdp.Flatten(tr, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNewRefusesLongPrompts checks that a training prompt with no room under MaxLen is refused
// up front, naming the problem and the setting.
func TestNewRefusesLongPrompts(t *testing.T) {
	cfg := DefaultRLConfig(GRPO)
	cfg.MaxLen = 8
	probs := []Problem{{Prompt: make([]int, 3)}, {Prompt: make([]int, 8)}}
	_, err := New(cfg, 1, nil, nil, Specials{}, probs)
	if err == nil || !strings.Contains(err.Error(), "training problem 1") || !strings.Contains(err.Error(), "--rl.max-len") {
		t.Fatalf("New with an 8-token prompt under MaxLen 8: %v", err)
	}
}

// TestFlattenResultsRefusesUnplacedReward checks that a reward with no agent token to sit on
// stops the step instead of vanishing from the advantages, and that a row without agent tokens
// and without reward passes.
func TestFlattenResultsRefusesUnplacedReward(t *testing.T) {
	acted := &rollout.Result{Trajectory: mdp.Trajectory{Prompt: []int{1, 2}, OutcomeReward: 1,
		Turns: []mdp.Turn{{Action: []int{3, fakeImEnd}, ActionLogProbs: []float32{-1, -2}}}}}
	silent := func(reward float64) *rollout.Result {
		return &rollout.Result{Group: 1, Trajectory: mdp.Trajectory{Prompt: []int{1, 2}, OutcomeReward: reward}}
	}
	col, err := FlattenResults([]*rollout.Result{acted, silent(0)}, fakePad)
	if err != nil {
		t.Fatalf("rows without an unplaced reward: %v", err)
	}
	if got := rl.OutcomeScores(rl.MatrixOf(col.Batch.B, col.Batch.L, col.Batch.Rewards)); !slices.Equal(got, []float64{1, 0}) {
		t.Errorf("scores %v, want [1 0]", got)
	}
	_, err = FlattenResults([]*rollout.Result{acted, silent(-1)}, fakePad)
	if err == nil || !strings.Contains(err.Error(), "row 1") || !strings.Contains(err.Error(), "no agent token") {
		t.Errorf("a reward of -1 on a row without agent tokens: err %v, want it refused naming row 1", err)
	}
}
