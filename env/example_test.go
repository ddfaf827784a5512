package env_test

import (
	"context"
	"fmt"
	"strings"

	"agentr1/env"
)

// wordCount is a new tool: it counts the words of a text. A tool is four methods: its name,
// a description and a JSON schema for the prompt's <tools> block, and Call, which gets
// arguments already checked against the schema.
type wordCount struct{}

func (wordCount) Name() string        { return "word_count" }
func (wordCount) Description() string { return "Count the words of a text." }
func (wordCount) Parameters() *env.Schema {
	return &env.Schema{Type: "object", Required: []string{"text"},
		Properties: map[string]*env.Schema{"text": {Type: "string", Description: "The text."}}}
}
func (wordCount) Call(_ context.Context, args map[string]any) (string, error) {
	text := args["text"].(string) // the schema made it a string
	if strings.TrimSpace(text) == "" {
		return "", fmt.Errorf("no words in %q", text)
	}
	return fmt.Sprint(len(strings.Fields(text))), nil
}

// Example defines a tool, registers it, builds it by name as `--tools` does and runs one
// episode: the agent calls the tool, then a tool that does not exist, then answers.
func Example() {
	reg := env.NewRegistry()
	if err := reg.Register("word_count", func(env.ToolSetup) (env.Tool, error) { return wordCount{}, nil }); err != nil {
		panic(err)
	}
	names, _ := env.ParseToolNames("word_count")
	tools, err := reg.Build(names, env.ToolSetup{})
	if err != nil {
		panic(err)
	}
	fmt.Println(env.RenderTools(tools)) // what the system prompt lists

	e, err := env.NewToolEnv(env.DefaultConfig(), tools...)
	if err != nil {
		panic(err)
	}
	// Pay 0.1 for each call that ran: the one hook through which tools reward their calls.
	e.SetProcessReward(func(rec *env.CallRecord) float64 {
		if rec.Status == env.CallOK {
			return 0.1
		}
		return 0
	})
	ctx := context.Background()
	for _, turn := range []string{
		`<tool_call>{"name": "word_count", "arguments": {"text": "to be or not to be"}}</tool_call>`,
		`<tool_call>{"name": "letter_count", "arguments": {"text": "be"}}</tool_call>`,
		`<answer>6</answer>`,
	} {
		res := e.Step(ctx, turn)
		for _, c := range res.Calls {
			fmt.Printf("turn %d: %s -> %q (%s, reward %.1f)\n", res.Turn, c.Call.Name, c.Output, c.Status, c.ProcessReward)
		}
		if res.Done {
			fmt.Printf("turn %d: episode ends: %s\n", res.Turn, res.End)
		}
	}
	st := e.Stats()
	fmt.Printf("calls %d, format errors %d, process reward %.1f\n", st.ToolCalls, st.FormatErrors, st.ProcessReward)
	// Output:
	// <tools>
	// {"type": "function", "function": {"name": "word_count", "description": "Count the words of a text.", "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "The text."}}, "required": ["text"]}}}
	// </tools>
	// turn 1: word_count -> "6" (ok, reward 0.1)
	// turn 2: letter_count -> "Error: unknown tool \"letter_count\"; tools: word_count" (unknown_tool, reward 0.0)
	// turn 3: episode ends: no_tool_call
	// calls 2, format errors 1, process reward 0.1
}
