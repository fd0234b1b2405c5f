package local

import (
	"fmt"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/store"
)

// compiled is the runner's agents with their tools checked and prepared:
// replaced as a whole when a toolset changes, so a step sees one version.
type compiled struct {
	machine  *engine.Machine
	tools    map[string]map[string]*Tool // agent → tool
	order    map[string][]string         // agent → tool names, as listed
	versions map[string]version          // agent → its definition
	hashes   map[string]bool             // the definitions of its agents
}

// compileAll compiles every agent's tools, its own and its toolsets'.
func (r *Runner) compileAll() (*compiled, error) {
	return r.compileAgents(r.order, r.agents)
}

// compileAgents compiles agents (listed in order): the deployed ones, or
// those of a stored definition (rebuild).
func (r *Runner) compileAgents(order []string, agents map[string]*Agent) (*compiled, error) {
	c := &compiled{tools: map[string]map[string]*Tool{}, order: map[string][]string{}}
	specs := map[string]*engine.Agent{}
	for _, name := range order {
		a := agents[name]
		spec := &engine.Agent{Name: a.Name, Instructions: a.Instructions, Tools: map[string]*engine.Tool{}, MaxIterations: a.MaxIterations,
			OutputSchema: a.OutputSchema, CheckOutput: a.CheckOutput, OutputRetries: a.OutputRetries, Review: a.Review, Direct: a.Direct, NoSenderTools: a.NoClientTools}
		if a.CallerTool != nil {
			spec.CallerTool = a.CallerTool.Engine
		}
		if spec.MaxIterations <= 0 {
			spec.MaxIterations = DefaultMaxIterations
		}
		tools := map[string]*Tool{}
		var all []*Tool
		if a.Tools != nil {
			var err error
			if all, err = a.Tools(); err != nil {
				return nil, fmt.Errorf("cairn: agent %q: %w", a.Name, err)
			}
		}
		for _, t := range all {
			et := t.Engine
			name := et.Definition.Name
			if tools[name] != nil {
				return nil, fmt.Errorf("cairn: agent %q: tool %q is listed twice", a.Name, name)
			}
			if (et.Kind == engine.ToolAgent || et.Kind == engine.ToolHandoff) && agents[et.Target] == nil {
				return nil, fmt.Errorf("cairn: agent %q: tool %q runs agent %q, which is not among the runner's agents", a.Name, name, et.Target)
			}
			tools[name] = t
			spec.Tools[name] = et
			spec.Definitions = append(spec.Definitions, et.Definition)
			c.order[a.Name] = append(c.order[a.Name], name)
		}
		c.tools[a.Name], specs[a.Name] = tools, spec
	}
	_, blobs := r.store.(store.Blobs)
	if err := define(c, agents, specs, blobs); err != nil {
		return nil, err
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
