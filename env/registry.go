package env

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ToolSetup is what a tool is built from: the passages of the world or corpus an episode
// searches and the search's settings. A tool that needs none of it (a calculator) ignores it.
type ToolSetup struct {
	Passages []Passage // the corpus a search tool indexes
	TopK     int       // passages one search returns
	Workers  int       // goroutines a tool may use to build itself (an index), 0: GOMAXPROCS
}

// ToolFactory builds one tool from a setup. The tool's Name must be the name it is registered
// under.
type ToolFactory func(ToolSetup) (Tool, error)

// Registry maps tool names to the factories that build them, so that a run chooses its tools
// by name (`--tools search,calculator`) and one list of names builds the same tools over each
// world's passages.
type Registry struct {
	factories map[string]ToolFactory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]ToolFactory{}} }

// Register adds the factory of the tool called name. It fails if the name is empty, holds a
// comma or space (it could not be chosen in a ToolNames list) or is registered already.
func (r *Registry) Register(name string, f ToolFactory) error {
	if name == "" || strings.ContainsAny(name, ", \t\n") {
		return fmt.Errorf("env: tool name %q: want a non-empty name without commas or spaces", name)
	}
	if _, dup := r.factories[name]; dup {
		return fmt.Errorf("env: tool %q registered twice", name)
	}
	r.factories[name] = f
	return nil
}

// Has reports whether a tool called name is registered.
func (r *Registry) Has(name string) bool {
	_, ok := r.factories[name]
	return ok
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Build builds the tools called names, in that order, from setup. It fails on a name not
// registered (naming the registered ones), on a factory's error, and on a tool whose Name is
// not the name it was registered under.
func (r *Registry) Build(names ToolNames, setup ToolSetup) ([]Tool, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("env: no tools chosen; registered: %s", strings.Join(r.Names(), ", "))
	}
	tools := make([]Tool, 0, len(names))
	for _, name := range names {
		f, ok := r.factories[name]
		if !ok {
			return nil, fmt.Errorf("env: unknown tool %q; registered: %s", name, strings.Join(r.Names(), ", "))
		}
		t, err := f(setup)
		if err != nil {
			return nil, fmt.Errorf("env: tool %q: %w", name, err)
		}
		if t.Name() != name {
			return nil, fmt.Errorf("env: tool registered as %q calls itself %q", name, t.Name())
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// ToolNames is a run's choice of tools, written as a comma-separated list ("search,calculator")
// on the command line and in config.json.
type ToolNames []string

// ParseToolNames reads a comma-separated list of tool names, spaces around names ignored. It
// fails on an empty list, an empty name or a name given twice.
func ParseToolNames(s string) (ToolNames, error) {
	var names ToolNames
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name := strings.TrimSpace(part)
		if name == "" {
			return nil, fmt.Errorf("tools %q: an empty name; want names separated by commas, e.g. search,calculator", s)
		}
		if seen[name] {
			return nil, fmt.Errorf("tools %q: %q given twice", s, name)
		}
		seen[name] = true
		names = append(names, name)
	}
	return names, nil
}

// String is the comma-separated list.
func (n ToolNames) String() string { return strings.Join(n, ",") }

// Has reports whether name is in the list.
func (n ToolNames) Has(name string) bool { return slices.Contains(n, name) }

// MarshalText writes the comma-separated list.
func (n ToolNames) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

// UnmarshalText reads a comma-separated list (ParseToolNames).
func (n *ToolNames) UnmarshalText(b []byte) error {
	names, err := ParseToolNames(string(b))
	if err != nil {
		return err
	}
	*n = names
	return nil
}
