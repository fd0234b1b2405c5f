package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Definition is what a session of an agent runs under: the agent and every
// agent its tools reach (sub-agents, handoffs), each with its description
// and its tools' as package cairn writes them (Agent.Spec, Tool.Spec).
// The SHA-256 of its JSON form is recorded when a session starts; the
// document is kept once in the store's blobs (DefinitionKey), so that a
// session paused under it resumes under it after the deployment changed.
type Definition struct {
	Agent  string         `json:"agent"`
	Agents []DefinedAgent `json:"agents"` // by name
}

// DefinedAgent is one agent of a Definition.
type DefinedAgent struct {
	Name  string            `json:"name"`
	Spec  json.RawMessage   `json:"spec"`
	Tools []json.RawMessage `json:"tools"` // in the order the model sees them
}

// Rebuild makes the agents of a stored definition again, for a session
// that runs under it (the last argument of New): each agent's Tools return the
// tools as the definition has them, with what cannot be stored (handlers,
// models, policies written in Go) from the agents deployed now.
type Rebuild func(def *Definition) ([]*Agent, error)

// DefinitionKey is the blob key of the definition of hash.
func DefinitionKey(hash string) string { return "def/" + hash }

// definitionHash is the content hash of a definition's JSON form.
func definitionHash(doc []byte) string {
	sum := sha256.Sum256(doc)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// version is one agent's definition in a compiled set of agents.
type version struct {
	hash string
	doc  []byte
}

// define computes the definition of every agent of c, and sets the
// engine agents' Definition: an agent's covers the agents it reaches.
// With record false (a store that keeps no blobs, so no definition could
// be rebuilt) sessions record none, and resume under the deployed agents.
func define(c *compiled, agents map[string]*Agent, specs map[string]*engine.Agent, record bool) error {
	c.versions, c.hashes = make(map[string]version, len(specs)), make(map[string]bool, len(specs))
	for name := range specs {
		reached := map[string]bool{name: true}
		for todo := []string{name}; len(todo) > 0; {
			next := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			for _, t := range specs[next].Tools {
				if (t.Kind == engine.ToolAgent || t.Kind == engine.ToolHandoff) && !reached[t.Target] && specs[t.Target] != nil {
					reached[t.Target] = true
					todo = append(todo, t.Target)
				}
			}
		}
		def := Definition{Agent: name}
		for _, n := range slices.Sorted(maps.Keys(reached)) {
			d := DefinedAgent{Name: n, Spec: agents[n].Spec, Tools: make([]json.RawMessage, 0, len(c.order[n]))}
			if len(d.Spec) == 0 {
				d.Spec = json.RawMessage(`{}`)
			}
			for _, tool := range c.order[n] {
				spec := c.tools[n][tool].Spec
				if len(spec) == 0 {
					spec = json.RawMessage(`{}`)
				}
				d.Tools = append(d.Tools, spec)
			}
			def.Agents = append(def.Agents, d)
		}
		doc, err := json.Marshal(def)
		if err != nil {
			return fmt.Errorf("cairn: agent %q: its definition: %w", name, err)
		}
		v := version{hash: definitionHash(doc), doc: doc}
		c.versions[name], c.hashes[v.hash] = v, true
		if record {
			specs[name].Definition = v.hash
		}
		specs[name].FollowLatest = agents[name].FollowLatest
	}
	return nil
}

// versions keeps the definitions this process stored and the machines it
// built for sessions that run under an older one.
type versions struct {
	mu     sync.Mutex
	stored map[string]bool // hashes known to be in the store's blobs
	base   *compiled       // the deployment the pinned machines were built beside
	pinned map[string]*compiled
}

// maxPinned bounds the machines kept for older definitions: a deployment
// has few versions in flight, and a machine is rebuilt when it was dropped.
const maxPinned = 32

// keepDefinition stores the definition a session of agent starts under,
// once per process and hash, before the session is written: a session's
// definition is always in the store. A store without blobs records none.
func (r *Runner) keepDefinition(ctx context.Context, c *compiled, agent string) error {
	v, ok := c.versions[agent]
	blobs, canStore := r.store.(store.Blobs)
	if !ok || !canStore {
		return nil
	}
	r.defs.mu.Lock()
	done := r.defs.stored[v.hash]
	r.defs.mu.Unlock()
	if done {
		return nil
	}
	if err := blobs.PutBlob(ctx, DefinitionKey(v.hash), v.doc); err != nil {
		return fmt.Errorf("cairn: store the definition of agent %q: %w", agent, err)
	}
	r.defs.mu.Lock()
	if r.defs.stored == nil {
		r.defs.stored = map[string]bool{}
	}
	r.defs.stored[v.hash] = true
	r.defs.mu.Unlock()
	return nil
}

// forSession is the compiled agents a session steps with: the deployed
// ones, unless the session runs under another definition of its agent and
// the agent does not follow the latest (on_new_version: pin, the default):
// then those of the session's own definition, rebuilt from the store.
func (r *Runner) forSession(ctx context.Context, st *engine.State) (*compiled, error) {
	if c := r.compiled.Load(); st.Definition != "" && r.agents[st.Agent] != nil && r.agents[st.Agent].FollowLatest {
		return c, nil
	}
	return r.compiledFor(ctx, st.Definition)
}

// compiledFor is the compiled agents of the definition hash: the deployed
// ones when one of their agents has it ("": a session started before
// versions were recorded), else those rebuilt from the store.
func (r *Runner) compiledFor(ctx context.Context, hash string) (*compiled, error) {
	c := r.compiled.Load()
	if hash == "" || c.hashes[hash] {
		return c, nil
	}
	return r.pinned(ctx, c, hash)
}

// pinned is the compiled agents of the definition hash, built beside the
// deployed ones c (their handlers and models).
func (r *Runner) pinned(ctx context.Context, c *compiled, hash string) (*compiled, error) {
	r.defs.mu.Lock()
	if r.defs.base != c { // the deployment changed (a toolset): build again
		r.defs.base, r.defs.pinned = c, map[string]*compiled{}
	}
	p := r.defs.pinned[hash]
	r.defs.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := r.rebuild(ctx, hash)
	if err != nil {
		return nil, err
	}
	r.defs.mu.Lock()
	defer r.defs.mu.Unlock()
	if r.defs.base == c {
		if len(r.defs.pinned) >= maxPinned {
			clear(r.defs.pinned)
		}
		r.defs.pinned[hash] = p
	}
	return p, nil
}

// noDefinition refuses a step of a session whose definition cannot be had
// here (409: nothing changes; configure the agent again, or follow the
// latest).
func noDefinition(hash, format string, args ...any) error {
	return &session.Error{Code: session.CodeConflict, Message: fmt.Sprintf("the session runs under definition %s of its agent, which cannot be rebuilt here: %s; configure what it needs again, or set the agent's on_new_version: latest",
		hash, fmt.Sprintf(format, args...))}
}

// rebuild reads the definition hash from the store and compiles it.
func (r *Runner) rebuild(ctx context.Context, hash string) (*compiled, error) {
	blobs, ok := r.store.(store.Blobs)
	if !ok || r.rebuildDef == nil {
		return nil, noDefinition(hash, "this runner cannot rebuild definitions")
	}
	found, err := blobs.GetBlobs(ctx, []string{DefinitionKey(hash)})
	if err != nil {
		return nil, fmt.Errorf("cairn: read definition %s: %w", hash, err)
	}
	if len(found) != 1 || found[0] == nil {
		return nil, noDefinition(hash, "the store does not have it")
	}
	if got := definitionHash(found[0]); got != hash {
		return nil, noDefinition(hash, "the stored document hashes to %s", got)
	}
	var def Definition
	if err := json.Unmarshal(found[0], &def); err != nil {
		return nil, noDefinition(hash, "%v", err)
	}
	agents, err := r.rebuildDef(&def)
	if err != nil {
		return nil, noDefinition(hash, "%v", err)
	}
	byName := make(map[string]*Agent, len(agents))
	order := make([]string, 0, len(agents))
	for _, a := range agents {
		byName[a.Name] = a
		order = append(order, a.Name)
	}
	c, err := r.compileAgents(order, byName)
	if err != nil {
		return nil, noDefinition(hash, "%v", err)
	}
	if got := c.versions[def.Agent].hash; got != hash {
		// What was rebuilt is not what was stored: run nothing under it.
		return nil, noDefinition(hash, "it was rebuilt as %s", got)
	}
	return c, nil
}

// markCurrent fills in whether a session's definition is the one deployed
// now (session.DefinitionVersion.Current).
func (r *Runner) markCurrent(s *session.Session) {
	if s == nil || s.Definition == nil {
		return
	}
	v, ok := r.compiled.Load().versions[s.Agent]
	s.Definition.Current = ok && v.hash == s.Definition.Hash
}
