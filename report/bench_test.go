package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRender renders a run of 50 steps with 8 samples of about 1000 tokens each: the
// page reads all of samples.jsonl twice and draws 3 steps x 4 samples.
func BenchmarkRender(b *testing.B) {
	dir := b.TempDir()
	var m strings.Builder
	for step := 1; step <= 50; step++ {
		fmt.Fprintf(&m, `{"step": %d, "reward_mean": %g, "em": %g, "approx_kl": 0.01, "entropy": 1.1, "response_length": 300}`+"\n",
			step, float64(step)/50, float64(step)/60)
	}
	if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte(m.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	base := demoSample(0, 1, 1, "answer")
	var long []Token
	for len(long) < 1000 {
		long = append(long, base.Tokens...)
	}
	tokens := 0
	for step := 1; step <= 50; step++ {
		var batch []Sample
		for i := range 8 {
			s := base
			s.Step, s.Tokens = step, long
			s.Question = fmt.Sprintf("question %d", i)
			batch = append(batch, s)
			tokens += len(long)
		}
		if err := WriteSamples(filepath.Join(dir, SamplesFile), batch); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if err := Render(io.Discard, dir, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
