package calc

import (
	"context"
	"fmt"

	"agentr1/env"
)

// Name is the name the agent calls the calculator by.
const Name = "calculator"

// Tool is the calculator as an env.Tool: {"expression": string} in, the value by Format out.
// It holds no state and is safe for concurrent use.
type Tool struct{}

var _ env.Tool = Tool{}

// Name implements env.Tool.
func (Tool) Name() string { return Name }

// Description implements env.Tool.
func (Tool) Description() string {
	return fmt.Sprintf("Evaluate an arithmetic expression: numbers, + - * / %% ^, parentheses and unary minus. "+
		"The answer is rounded to %d decimal places.", Decimals)
}

// Parameters implements env.Tool: {"expression": string}, required.
func (Tool) Parameters() *env.Schema {
	return &env.Schema{Type: "object", Required: []string{"expression"},
		Properties: map[string]*env.Schema{"expression": {Type: "string",
			Description: "The expression, e.g. (1994 - 1921) * 2."}}}
}

// Call implements env.Tool: it evaluates args["expression"] (the ToolEnv has checked it is a
// string) and returns Format of the value, or Eval's error for the agent to read.
func (Tool) Call(_ context.Context, args map[string]any) (string, error) {
	expr, _ := args["expression"].(string)
	x, err := Eval(expr)
	if err != nil {
		return "", err
	}
	return Format(x), nil
}
