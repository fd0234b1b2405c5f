package cairn

import (
	"fmt"

	"github.com/cairnhq/cairn/internal/engine"
)

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

// compiled is the runner's agents with their tools checked and prepared:
// replaced as a whole when a toolset changes, so a step sees one version.
type compiled struct {
	machine *engine.Machine
	tools   map[string]map[string]*compiledTool // agent → tool
	order   map[string][]string                 // agent → tool names, as listed
}

// compileAll compiles every agent's tools, its own and its toolsets'.
func (r *Runner) compileAll() (*compiled, error) {
	c := &compiled{tools: map[string]map[string]*compiledTool{}, order: map[string][]string{}}
	specs := map[string]*engine.Agent{}
	for _, name := range r.order {
		a := r.agents[name]
		spec := &engine.Agent{Name: a.Name, Instructions: a.Instructions, Tools: map[string]*engine.Tool{}, MaxIterations: a.MaxIterations}
		if spec.MaxIterations <= 0 {
			spec.MaxIterations = DefaultMaxIterations
		}
		tools := map[string]*compiledTool{}
		all := a.Tools
		for _, ts := range a.Toolsets {
			all = append(all[:len(all):len(all)], ts.Tools()...)
		}
		for _, t := range all {
			ct, err := compileTool(t)
			if err != nil {
				return nil, fmt.Errorf("cairn: agent %q: %w", a.Name, err)
			}
			if tools[t.Name] != nil {
				return nil, fmt.Errorf("cairn: agent %q: tool %q is listed twice", a.Name, t.Name)
			}
			if t.kind != engine.ToolFunction && r.agents[t.target] == nil {
				return nil, fmt.Errorf("cairn: agent %q: tool %q runs agent %q, which is not among the runner's agents", a.Name, t.Name, t.target)
			}
			tools[t.Name] = ct
			et := ct.engineTool()
			spec.Tools[t.Name] = et
			spec.Definitions = append(spec.Definitions, et.Definition)
			c.order[a.Name] = append(c.order[a.Name], t.Name)
		}
		c.tools[a.Name], specs[a.Name] = tools, spec
	}
	opts := r.engineOpts
	c.machine = engine.New(specs, &opts)
	return c, nil
}

// toolsetChanged recompiles the agents after a toolset changed. A change
// that does not compile (two tools with one name) is logged and ignored:
// the agents keep the tools they had.
func (r *Runner) toolsetChanged() {
	r.compileMu.Lock()
	defer r.compileMu.Unlock()
	c, err := r.compileAll()
	if err != nil {
		r.log.Error("a toolset changed, but its tools do not fit; the agents keep their tools", "err", err)
		return
	}
	r.compiled.Store(c)
	r.log.Info("tools changed")
}
