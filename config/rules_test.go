package config_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
)

const rulesConfig = `store: memory
suggestions: {min_approvals: 40, min_people: 3}
models:
  default: {provider: scripted, script: [{text: hi}]}
tools:
  deploy:
    builtin: echo
    approval: always
    standing_rules: {allow: true, max_duration: 7d}
  wipe:
    builtin: echo
    approval: always
    standing_rules: {allow: false}
  forever:
    builtin: echo
    approval: always
    standing_rules: {max_duration: unbounded}
  plain:
    builtin: echo
    approval: always
agents:
  main: {model: default, tools: [deploy, wipe, forever, plain]}
`

// A tool's standing_rules: allow: false forbids them, max_duration bounds
// them (days, a Go duration, or unbounded), and no section allows 30 days.
func TestStandingRulesConfig(t *testing.T) {
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "cairn.yaml"), []byte(rulesConfig), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Suggestions != (cairn.SuggestionPolicy{MinApprovals: 40, MinPeople: 3}) {
		t.Errorf("suggestions: %+v", cfg.Suggestions)
	}
	tools := map[string]*cairn.Tool{}
	for _, tool := range cfg.Agents[0].Tools {
		tools[tool.Name] = tool
	}
	for name, want := range map[string]cairn.StandingRules{
		"deploy":  {MaxDuration: 7 * 24 * time.Hour},
		"wipe":    {Forbidden: true},
		"forever": {Unbounded: true, MaxDuration: 100 * 365 * 24 * time.Hour},
		"plain":   {},
	} {
		if got := tools[name].StandingRules; got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	for _, c := range []struct{ from, to, says string }{
		{"max_duration: 7d}", "max_duration: 7 days}", `tools.deploy.standing_rules.max_duration: "7 days" is not a positive duration`},
		{"{allow: false}", "{allow: false, max_duration: 3d}", "tools.wipe.standing_rules.max_duration: rules are not allowed"},
		{"{allow: false}", "{allwo: false}", `did you mean "allow"?`},
		{"min_people: 3}", "min_people: -1}", "suggestions: min_approvals and min_people are counts"},
	} {
		_, err := config.Parse(filepath.Join(t.TempDir(), "cairn.yaml"), []byte(strings.Replace(rulesConfig, c.from, c.to, 1)), func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %q", c.to, err, c.says)
		}
	}
}
