package cairn

import (
	"github.com/cairnhq/cairn/internal/runtime"
	"github.com/cairnhq/cairn/model"
)

// DefaultMaxIterations is an agent's limit of model calls per turn when
// Agent.MaxIterations is 0.
const DefaultMaxIterations = runtime.DefaultMaxIterations

// Agent is pure configuration: a name, instructions, a model and tools.
type Agent struct {
	Name         string
	Instructions string
	Model        model.Model
	Tools        []*Tool
	// Toolsets are sources of more tools that may change while the runner
	// runs, such as an MCP server's (mcptools.Hub.Toolset): the runner re-reads
	// them when they say they changed.
	Toolsets []Toolset
	// MaxIterations is the number of model calls allowed in one turn; the
	// next one fails the turn. 0 means DefaultMaxIterations.
	MaxIterations int
}

// Toolset is a source of tools that may change while a Runner runs, such
// as an MCP server's tools (which it announces with
// notifications/tools/list_changed). Add it to Agent.Toolsets.
type Toolset interface {
	// Tools returns the current tools. A tool a session already called
	// should stay listed (or its later calls fail with an error result).
	Tools() []*Tool
	// Notify registers fn to be called, on any goroutine, after Tools
	// changed.
	Notify(fn func())
}

// compile is the agent as the runtime takes it: its tools compiled when
// the runtime asks (at NewRunner, and again each time a toolset changes).
func (a *Agent) compile() *runtime.Agent {
	ra := &runtime.Agent{Name: a.Name, Instructions: a.Instructions, Model: a.Model, MaxIterations: a.MaxIterations,
		Tools: func() ([]*runtime.Tool, error) {
			all := a.Tools
			for _, ts := range a.Toolsets {
				all = append(all[:len(all):len(all)], ts.Tools()...)
			}
			out := make([]*runtime.Tool, 0, len(all))
			for _, t := range all {
				ct, err := t.compile()
				if err != nil {
					return nil, err
				}
				out = append(out, ct)
			}
			return out, nil
		}}
	if len(a.Toolsets) > 0 {
		ra.Notify = func(fn func()) {
			for _, ts := range a.Toolsets {
				ts.Notify(fn)
			}
		}
	}
	return ra
}
