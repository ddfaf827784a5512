// Package env is the environment side of the paper's extended MDP (Agent-R1 section 3.1): Tool,
// one atomic capability with a JSON-schema interface; ToolEnv, which parses the agent's tool
// calls, validates and runs them, and formats their results as observations; and the small
// JSON-schema validator they share.
package env

import "context"

// Tool is one capability the agent can call, described to the model by its name, description
// and JSON-schema parameters (rendered into the system prompt's <tools> block).
type Tool interface {
	// Name is the name the agent calls the tool by, e.g. "search".
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Parameters is the JSON schema of the arguments object.
	Parameters() *Schema
	// Call runs the tool on validated arguments and returns the text the agent will read.
	// An error is reported to the agent as the observation; it never ends the run.
	Call(ctx context.Context, args map[string]any) (string, error)
}

// Schema is the subset of JSON Schema that tool parameters use: objects with typed properties,
// required names, enums and numeric bounds.
type Schema struct {
	Type        string             `json:"type"`                  // "object", "string", "integer", "number", "boolean", "array"
	Description string             `json:"description,omitempty"` // what the value means, shown to the agent
	Properties  map[string]*Schema `json:"properties,omitempty"`  // an object's fields, by name
	Required    []string           `json:"required,omitempty"`    // the object fields that must be present
	Enum        []any              `json:"enum,omitempty"`        // the allowed values (empty: any)
	Minimum     *float64           `json:"minimum,omitempty"`     // a number's inclusive lower bound (nil: none)
	Maximum     *float64           `json:"maximum,omitempty"`     // a number's inclusive upper bound (nil: none)
	Items       *Schema            `json:"items,omitempty"`       // an array's element schema
}
