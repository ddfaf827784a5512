package calc

import (
	"context"
	"fmt"

	"agentr1/env"
)

// Name is the name the agent calls the calculator by.
const Name = "calculator"

// Param is the name of the calculator's one argument, the expression to evaluate.
const Param = "expression"

// ExpressionOf returns the expression of a calculator call's arguments ("" when it is missing
// or not a string): the one reading of a call that the tool, the environment's rewards and the
// measures share.
func ExpressionOf(args map[string]any) string {
	expr, _ := args[Param].(string)
	return expr
}

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
	return &env.Schema{Type: "object", Required: []string{Param},
		Properties: map[string]*env.Schema{Param: {Type: "string",
			Description: "The expression, e.g. (1994 - 1921) * 2."}}}
}

// Call implements env.Tool: it evaluates the expression (the ToolEnv has checked it is a
// string) and returns Format of the value, or Eval's error for the agent to read.
func (Tool) Call(_ context.Context, args map[string]any) (string, error) {
	x, err := Eval(ExpressionOf(args))
	if err != nil {
		return "", err
	}
	return Format(x), nil
}
