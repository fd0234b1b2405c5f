package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/anthropic"
	"github.com/cairnhq/cairn/model/gemini"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/model/scripted"
)

// scripted builds a scripted model from script (every turn) and scripts
// (per agent, across turns); the agents named must exist.
func (l *loader) scripted(p string, mc ModelConfig) (model.Model, error) {
	replies, err := l.scriptReplies(p+".script", mc.Script)
	if err != nil {
		return nil, err
	}
	m := scripted.New(replies...)
	m.Stream = mc.Stream
	if m.Bounds, err = l.modelLimits(p, mc); err != nil {
		return nil, err
	}
	for _, agent := range sortedKeys(mc.Scripts) {
		if _, ok := l.agents[agent]; !ok {
			return nil, l.errf(p+".scripts."+agent, "unknown agent %q; defined agents: %s%s", agent, strings.Join(sortedKeys(l.agents), ", "), suggest.Hint(agent, sortedKeys(l.agents)))
		}
		rs, err := l.scriptReplies(p+".scripts."+agent, mc.Scripts[agent])
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			return nil, l.errf(p+".scripts."+agent, "the script is empty: list the agent's replies ({text: …} or {tool_calls: […]})")
		}
		if m.Scripts == nil {
			m.Scripts = map[string][]scripted.Reply{}
		}
		m.Scripts[agent] = rs
	}
	if len(replies) == 0 && len(m.Scripts) == 0 {
		return nil, l.errf(p+".script", "a scripted model needs a script: a list of replies ({text: …} or {tool_calls: […]}), or scripts: per agent")
	}
	return m, nil
}

func (l *loader) scriptReplies(key string, script []ScriptReply) ([]scripted.Reply, error) {
	var replies []scripted.Reply
	for i, r := range script {
		rep := scripted.Reply{Text: r.Text}
		for j, c := range r.ToolCalls {
			args := "{}"
			switch a := c.Arguments.(type) {
			case nil:
			case string:
				args = a
			default:
				b, err := json.Marshal(a)
				if err != nil {
					return nil, l.errf(key, "[%d].tool_calls[%d].arguments: %v", i, j, err)
				}
				args = string(b)
			}
			if c.Name == "" {
				return nil, l.errf(key, "[%d].tool_calls[%d]: name is missing", i, j)
			}
			rep.ToolCalls = append(rep.ToolCalls, scripted.Call{ID: c.ID, Name: c.Name, Arguments: args})
		}
		replies = append(replies, rep)
	}
	return replies, nil
}

func (l *loader) model(p string, mc ModelConfig) (model.Model, error) {
	switch mc.Provider {
	case "scripted":
		return l.scripted(p, mc)
	case "openai", "anthropic", "openai-responses", "gemini":
		if mc.Model == "" {
			return nil, l.errf(p+".model", "missing; name the model, e.g. gpt-4o-mini, claude-sonnet-4-5 (or llama3.1 on Ollama)")
		}
		keyEnv := mc.APIKeyEnv
		if keyEnv == "" && mc.BaseURL == "" && !(mc.Provider == "gemini" && mc.Vertex != nil) {
			// The providers themselves always need a key.
			keyEnv = map[string]string{"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}[mc.Provider]
		}
		key := ""
		if keyEnv != "" {
			v, ok := l.env(keyEnv)
			if !ok || v == "" {
				return nil, l.errf(p+".api_key_env", "environment variable %s is not set; export %s=… (or, for a local compatible server, set base_url and drop api_key_env)", keyEnv, keyEnv)
			}
			key = v
		}
		if mc.MaxRetries != nil && (*mc.MaxRetries < 0 || *mc.MaxRetries > 10) {
			return nil, l.errf(p+".max_retries", "%d is not between 0 and 10", *mc.MaxRetries)
		}
		limits, err := l.modelLimits(p, mc)
		if err != nil {
			return nil, err
		}
		if mc.SDK && mc.Provider != "openai" && mc.Provider != "openai-responses" {
			// The other adapters have one path: the SDK's.
			return nil, l.errf(p+".sdk", "is a setting of providers openai and openai-responses, whose lean path it turns off; %s always uses its SDK", mc.Provider)
		}
		if mc.Provider == "anthropic" {
			if mc.MaxTokens < 0 {
				return nil, l.errf(p+".max_tokens", "must be positive")
			}
			var thinking *anthropic.Thinking
			if mc.Thinking != nil {
				maxTokens := cmp.Or(mc.MaxTokens, anthropic.DefaultMaxTokens)
				if b := mc.Thinking.BudgetTokens; b < 1024 || b >= maxTokens {
					return nil, l.errf(p+".thinking.budget_tokens", "%d: use at least 1024 and less than max_tokens (%d); raise max_tokens for a larger budget", b, maxTokens)
				}
				thinking = &anthropic.Thinking{BudgetTokens: mc.Thinking.BudgetTokens}
			}
			return anthropic.New(mc.Model, &anthropic.Options{BaseURL: mc.BaseURL, APIKey: key, Stream: mc.Stream, MaxRetries: mc.MaxRetries, MaxTokens: mc.MaxTokens, Limits: limits, Thinking: thinking}), nil
		}
		if mc.Provider == "gemini" {
			opts := &gemini.Options{BaseURL: mc.BaseURL, APIKey: key, Stream: mc.Stream, MaxRetries: mc.MaxRetries, Limits: limits}
			if mc.MaxTokens < 0 || mc.MaxTokens > math.MaxInt32 {
				return nil, l.errf(p+".max_tokens", "%d is not a token count", mc.MaxTokens)
			}
			opts.MaxOutputTokens = int32(mc.MaxTokens)
			if mc.Thinking != nil {
				if b := mc.Thinking.BudgetTokens; b < -1 || b > math.MaxInt32 {
					return nil, l.errf(p+".thinking.budget_tokens", "%d: use a token count, 0 for no thinking or -1 to let the model decide", b)
				}
				opts.Thinking = &gemini.Thinking{BudgetTokens: int32(mc.Thinking.BudgetTokens)}
			}
			if v := mc.Vertex; v != nil {
				if v.Project == "" || v.Location == "" {
					return nil, l.errf(p+".vertex", "needs project and location, e.g. {project: my-project, location: us-central1}")
				}
				opts.Vertex, opts.Project, opts.Location = true, v.Project, v.Location
			}
			return gemini.New(mc.Model, opts), nil
		}
		if mc.Vertex != nil {
			return nil, l.errf(p+".vertex", "is a setting of provider gemini, not of %s", mc.Provider)
		}
		if mc.Thinking != nil {
			return nil, l.errf(p+".thinking", "provider %s has no thinking setting; thinking is for anthropic and gemini", mc.Provider)
		}
		if mc.Provider == "openai-responses" {
			opts := &openai.ResponsesOptions{Options: openai.Options{BaseURL: mc.BaseURL, APIKey: key, Stream: mc.Stream, MaxRetries: mc.MaxRetries, Limits: limits, SDK: mc.SDK},
				Store: mc.Store, MaxOutputTokens: mc.MaxTokens}
			if mc.Reasoning != nil {
				efforts := []string{"minimal", "low", "medium", "high"}
				if !slices.Contains(efforts, mc.Reasoning.Effort) {
					return nil, l.errf(p+".reasoning.effort", "%q: use one of %s%s", mc.Reasoning.Effort, strings.Join(efforts, ", "), suggest.Hint(mc.Reasoning.Effort, efforts))
				}
				opts.ReasoningEffort = mc.Reasoning.Effort
			}
			return openai.NewResponses(mc.Model, opts), nil
		}
		if mc.Reasoning != nil || mc.Store != nil {
			return nil, l.errf(p, "reasoning and store are settings of provider openai-responses (the Responses API), not of %s", mc.Provider)
		}
		return openai.New(mc.Model, &openai.Options{BaseURL: mc.BaseURL, APIKey: key, Stream: mc.Stream, MaxRetries: mc.MaxRetries, Limits: limits, SDK: mc.SDK}), nil
	case "":
		return nil, l.errf(p+".provider", "missing; one of openai, openai-responses, anthropic, gemini, scripted")
	}
	return nil, l.errf(p+".provider", "unknown provider %q; one of openai, openai-responses, anthropic, gemini, scripted%s", mc.Provider, suggest.Hint(mc.Provider, []string{"openai", "openai-responses", "anthropic", "gemini", "scripted"}))
}

// modelLimits reads a model's timeout, idle_timeout and max_reply_bytes.
func (l *loader) modelLimits(p string, mc ModelConfig) (model.Limits, error) {
	var lim model.Limits
	var err error
	if lim.Timeout, err = l.duration(p+".timeout", mc.Timeout, 0); err != nil {
		return lim, err
	}
	if lim.IdleTimeout, err = l.duration(p+".idle_timeout", mc.IdleTimeout, 0); err != nil {
		return lim, err
	}
	if mc.MaxReplyBytes != "" {
		if lim.MaxReplyBytes, err = parseBytes(mc.MaxReplyBytes); err != nil {
			return lim, l.errf(p+".max_reply_bytes", "%v", err)
		}
	}
	return lim, nil
}

// parseBytes reads a size: a whole number of bytes, or one with a unit
// B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (of 1000).
func parseBytes(v string) (int64, error) {
	s := strings.TrimSpace(v)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	units := map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1e3, "MB": 1e6, "GB": 1e9}
	unit, ok := units[strings.TrimSpace(s[i:])]
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if !ok || err != nil || n <= 0 || n > (1<<40)/unit {
		return 0, fmt.Errorf("%q is not a size like 8MiB, 512KiB or 1000000 (bytes; units B, KiB, MiB, GiB, KB, MB, GB)", v)
	}
	return n * unit, nil
}
