package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func render(t *testing.T, dir string, opt Options) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, dir, opt); err != nil {
		t.Fatalf("Render: %v", err)
	}
	return buf.String()
}

// TestRenderFullRun renders the fixture run and checks each thing the page promises: agent
// text escaped, the role classes, the heat colours, the reward badges, the charts, the
// evaluation table and the settings.
func TestRenderFullRun(t *testing.T) {
	html := render(t, writeRun(t), Options{})
	for _, tc := range []struct{ name, want string }{
		{"agent answer escaped", `&lt;answer&gt;</span><span class="tok role-agent act adv`},
		{"script in answer escaped", `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`},
		{"tool call tag escaped", `&lt;tool_call&gt;`},
		{"question escaped", `won &lt;Best Picture&gt; in 1998?`},
		{"gold alias escaped", `Cameron &amp; co`},
		{"tool error escaped", `unknown tool &#34;lookup&#34; &lt;b&gt;`},
		{"config value escaped", `&lt;script&gt;alert(&#39;cfg&#39;)&lt;/script&gt;`},
		{"prompt role class", `class="tok role-prompt"`},
		{"observation role class", `class="tok role-observation"`},
		{"agent token trained, top positive advantage", `class="tok role-agent act adv hp10"`},
		{"agent token, half negative advantage", `class="tok role-agent act adv hn5"`},
		{"top heat colour", `.adv.hp10{background:#b2182b;color:#fff}`},
		{"bottom heat colour", `.adv.hn10{background:#2166ac;color:#fff}`},
		{"white at zero", `.adv.h0{background:#ffffff}`},
		{"legend end label", `<span>&#43;1.5</span>`},
		{"positive reward badge", `<span class="badge pos" title="reward on the token before">&#43;1</span>`},
		{"negative reward badge", `<span class="badge neg" title="reward on the token before">-0.5</span>`},
		{"token hover text", `title="agent · action mask 1 (trained) · A = &#43;1.5 · log p = -0.250"`},
		{"observation hover text", `title="observation · action mask 0 · advantage mask 0"`},
		{"newline mark", `<span class="nl">↵</span>` + "\n"},
		{"em line path", `<path class="line" d="M58.0 210.0 L242.0 118.0 L426.0 26.0" stroke="#2563eb"/>`},
		{"reward band", `<polygon class="band" points="58.0,148.7 242.0,87.3 426.0,26.0 426.0,75.1 242.0,136.4 58.0,197.7"/>`},
		{"KL chart", `aria-label="KL divergence"`},
		{"entropy chart", `aria-label="Entropy"`},
		{"response length chart", `aria-label="Response length"`},
		{"durations charted", `aria-label="Time per step"`},
		{"unknown metric charted", `aria-label="kl_coef"`},
		{"x tick", `text-anchor="middle">3</text>`},
		{"eval header", `<th>metric</th><th>base</th><th>final</th><th>naive_rag</th><th>closed_book</th><th>final − base</th>`},
		{"eval em row", `<th>em</th><td class="num">0.1</td><td class="num">0.35</td><td class="num">0.2</td><td class="num">0.05</td><td class="num">&#43;0.25</td>`},
		{"eval by_type", `<caption>by_type</caption>`},
		{"nested setting", `<td>optim.lr</td><td>1e-6</td>`},
		{"array setting", `<td>optim.betas</td><td>[0.9,0.999]</td>`},
		{"default steps", `id="step-2"`},
		{"tool result", `<pre>1. Titanic (1997 film)`},
		{"how to read", `Observation tokens are never trained on`},
	} {
		if !strings.Contains(html, tc.want) {
			t.Errorf("%s: page lacks %q", tc.name, tc.want)
		}
	}
	for _, tc := range []struct{ name, bad string }{
		{"raw script from agent", `<script>alert`},
		{"raw tool call tag", `<tool_call>`},
		{"template escaping failure", `ZgotmplZ`},
		{"external resource", `src="http`},
		{"external stylesheet", `<link`},
		{"missing-file note", `id="missing"`},
	} {
		if strings.Contains(html, tc.bad) {
			t.Errorf("%s: page contains %q", tc.name, tc.bad)
		}
	}
	// The only script is the page's own toggle code.
	if n := strings.Count(html, "<script"); n != 1 {
		t.Errorf("page has %d <script elements, want 1", n)
	}
}

// TestRenderMissingFiles: a run directory with some files missing still renders and lists
// exactly the missing ones.
func TestRenderMissingFiles(t *testing.T) {
	full := writeRun(t)
	for _, tc := range []struct {
		name    string
		keep    []string
		missing []string
	}{
		{"empty", nil, []string{ConfigFile, MetricsFile, SamplesFile, EvalFile}},
		{"metrics only", []string{MetricsFile}, []string{ConfigFile, SamplesFile, EvalFile}},
		{"no eval", []string{ConfigFile, MetricsFile, SamplesFile}, []string{EvalFile}},
	} {
		dir := t.TempDir()
		for _, name := range tc.keep {
			raw, err := os.ReadFile(filepath.Join(full, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		html := render(t, dir, Options{})
		note := html[strings.Index(html, `id="missing"`)+1:]
		note = note[:strings.Index(note, "</div>")]
		for _, name := range []string{ConfigFile, MetricsFile, SamplesFile, EvalFile} {
			want := contains(tc.missing, name)
			if got := strings.Contains(note, "<code>"+name+"</code>"); got != want {
				t.Errorf("%s: note lists %s = %v, want %v", tc.name, name, got, want)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRenderMalformed: a bad file is an error naming the file and, for JSONL, the line.
func TestRenderMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, file, text, want string
	}{
		{"metrics bad JSON", MetricsFile, "{\"step\": 1}\n\n{\"step\": 2,\n{\"step\": 3}\n", MetricsFile + ":3:"},
		{"metrics not an object", MetricsFile, "{\"step\": 1}\n[1, 2]\n", MetricsFile + ":2: want a JSON object"},
		{"metrics two values", MetricsFile, "{\"step\": 1} {\"step\": 2}\n", MetricsFile + ":1: unexpected data"},
		{"samples wrong type", SamplesFile, "{\"step\": 1}\n{\"step\": \"two\"}\n", SamplesFile + ":2:"},
		{"samples bad JSON", SamplesFile, "{\"step\": 1}\n{\"step\": 1}\n{\"step\": 2, \"tokens\": [}\n", SamplesFile + ":3:"},
		{"samples bad token", SamplesFile, "{\"step\": 1, \"tokens\": [{\"text\": 5}]}\n", SamplesFile + ":1:"},
		{"config bad JSON", ConfigFile, "{\n  \"a\": 1,\n  \"b\": ]\n}\n", ConfigFile + ": line 3 col"},
		{"config not an object", ConfigFile, "[]", ConfigFile + ": want a JSON object"},
		{"eval truncated", EvalFile, "{\"base\": {\"em\": 0.1}", EvalFile + ":"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Render(&bytes.Buffer{}, dir, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestWriteHTML writes the page to a file and checks it is the rendered page.
func TestWriteHTML(t *testing.T) {
	dir := writeRun(t)
	out := filepath.Join(t.TempDir(), "report.html")
	if err := WriteHTML(dir, out, Options{Title: "demo <run>"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := render(t, dir, Options{Title: "demo <run>"}); string(raw) != want {
		t.Errorf("file differs from Render's output (%d vs %d bytes)", len(raw), len(want))
	}
	if !strings.Contains(string(raw), "<title>demo &lt;run&gt;</title>") {
		t.Errorf("title not set and escaped")
	}
	if err := WriteHTML(filepath.Join(dir, "nope"), out, Options{}); err == nil {
		t.Errorf("missing run directory: no error")
	}
}

// TestRenderPhases: with SFT and RL lines in metrics.jsonl, RL's curves come first, each
// phase under its heading, and the summary counts RL steps only.
func TestRenderPhases(t *testing.T) {
	dir := t.TempDir()
	lines := `{"step": 0, "phase": "sft", "loss": 2.5, "entropy": 1.5}
{"step": 1, "phase": "sft", "loss": 1.5, "entropy": 1.2}
{"step": 1, "phase": "rl", "reward_mean": -0.5, "em": 0, "approx_kl": 0, "entropy": 1.1, "response_len": 90}
{"step": 2, "phase": "rl", "reward_mean": 0.5, "em": 0.5, "approx_kl": 0.01, "entropy": 1.0, "response_len": 95, "explained_var": null}
`
	if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	html := render(t, dir, Options{})
	rl := strings.Index(html, "<h3>Reinforcement learning <span class=\"count\">2 lines</span></h3>")
	sft := strings.Index(html, "<h3>SFT warm start <span class=\"count\">2 lines</span></h3>")
	if rl < 0 || sft < rl {
		t.Errorf("phase headings at %d (RL) and %d (SFT), want RL first", rl, sft)
	}
	if i := strings.Index(html, `aria-label="Policy loss"`); i < sft {
		t.Errorf("SFT loss chart at %d, want after the SFT heading at %d", i, sft)
	}
	if !strings.Contains(html, `<div class="value">2</div><div class="sub">2 lines in metrics.jsonl</div>`) {
		t.Errorf("RL steps card does not count the RL lines only")
	}
	if strings.Count(html, "Not logged in") != 0 {
		t.Errorf("a required chart reported missing")
	}
}
