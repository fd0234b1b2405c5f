package local

import "github.com/cairnhq/cairn/session"

// Agents is cairn.Runner.Agents (documented there).
func (r *Runner) Agents() []session.AgentInfo {
	out := make([]session.AgentInfo, 0, len(r.order))
	for _, name := range r.order {
		info := session.AgentInfo{Name: name, Tools: []session.ToolInfo{}, Direct: r.agents[name].Direct}
		c := r.compiled.Load()
		for _, t := range c.order[name] {
			info.Tools = append(info.Tools, c.tools[name][t].Info)
		}
		out = append(out, info)
	}
	return out
}
