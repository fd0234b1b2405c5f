package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/chromedp/chromedp"
)

// The team example (examples/team/cairn.yaml) under a real `cairn serve`,
// in headless Chromium, one tab per person: the page shows each person
// what they decide apart from what they may only see, who decides a card,
// and a four-eyes refund's approvals as they come; two finance leads
// approve it from the page and it runs once.
func TestBrowserWhoDecides(t *testing.T) {
	ctx := browser(t)
	src, err := os.ReadFile("../../examples/team/cairn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, who := range []string{"ana", "fin1", "fin2", "uma", "gil", "ops"} {
		tokens[who] = who + "-token-0123456789abcdef"
		t.Setenv(strings.ToUpper(who)+"_TOKEN", tokens[who])
	}
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))

	_, refund := apiCall(t, "POST", base+"/v1/sessions", tokens["uma"], `{"agent":"billing","input":"refund order 42 (large)"}`)
	_, deploy := apiCall(t, "POST", base+"/v1/sessions", tokens["ana"], `{"agent":"ops","input":"ship it"}`)
	refundID, deployID := refund["id"].(string), deploy["id"].(string)

	// The CLI shows it the same way, and refuses as the API does.
	cli := func(who string, args ...string) (string, error) {
		out, err := exec.Command(binary, append([]string{"sessions", "--server", base, "--token", tokens[who]}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := cli("ana", "list", "--status", "paused"); err != nil || !strings.Contains(out, "[finance-leads, 0 of 2 approvals] (you may see this; someone else decides it)") {
		t.Fatalf("cairn sessions list as ana: %v\n%s", err, out)
	}
	if out, err := cli("ana", "approve", refundID); err == nil || !strings.Contains(out, "not_an_approver") && !strings.Contains(out, "member of finance-leads") {
		t.Fatalf("cairn sessions approve as ana: %v\n%s", err, out)
	}

	// Another tenant: gil, of globex, is told acme's refund does not
	// exist, by the CLI and the API, and lists none of acme's sessions;
	// ops, a global admin, sees it.
	if out, err := cli("gil", "show", refundID); err == nil || !strings.Contains(out, "not_found") && !strings.Contains(out, "no session") {
		t.Fatalf("cairn sessions show as gil: %v\n%s", err, out)
	}
	if out, err := cli("gil", "approve", refundID); err == nil || !strings.Contains(out, "not_found") && !strings.Contains(out, "no session") {
		t.Fatalf("cairn sessions approve as gil: %v\n%s", err, out)
	}
	if out, err := cli("gil", "list"); err != nil || strings.Contains(out, refundID) || strings.Contains(out, deployID) {
		t.Fatalf("cairn sessions list as gil: %v\n%s", err, out)
	}
	if out, err := cli("ops", "list", "--status", "paused"); err != nil || !strings.Contains(out, refundID) {
		t.Fatalf("cairn sessions list as ops: %v\n%s", err, out)
	}

	// One person at a time in the tab: the page keeps its token per tab
	// (sessionStorage), so signing in as another starts with it cleared.
	run := stepper(t, ctx)
	tab := func(who string) func(what string, actions ...chromedp.Action) {
		run(who+" signs in", chromedp.Navigate(base+"/"), chromedp.Evaluate(`sessionStorage.clear()`, nil),
			signIn(base, tokens[who]), chromedp.WaitVisible(item(refundID), chromedp.ByQuery))
		return run
	}
	var text string
	ana := tab("ana")
	ana("the header says ana's tenant", chromedp.Text("#whoami", &text, chromedp.ByID))
	if !strings.Contains(text, "ana (approver, acme)") {
		t.Fatalf("the header for ana: %q", text)
	}
	ana("ana sees the refund, decided by others",
		chromedp.WaitVisible(item(refundID)+" .may-see", chromedp.ByQuery),
		chromedp.TextContent(item(refundID)+" .approvers", &text, chromedp.ByQuery))
	if !strings.Contains(text, "Decided by a member of finance-leads") || !strings.Contains(text, "0 of 2 approvals") || !strings.Contains(text, "not by who asked for it (uma)") {
		t.Fatalf("the refund's card for ana:\n%s", text)
	}
	ana("ana approves the deploy", chromedp.Click(item(deployID)+" button.approve", chromedp.ByQuery),
		chromedp.WaitNotPresent(item(deployID), chromedp.ByQuery))

	uma := tab("uma")
	uma("uma, who asked, does not decide the refund", chromedp.WaitVisible(item(refundID)+" .may-see", chromedp.ByQuery))

	fin1 := tab("fin1")
	fin1("fin1 approves the refund: 1 of 2", chromedp.Click(item(refundID)+" button.approve", chromedp.ByQuery),
		chromedp.WaitVisible(item(refundID)+" .may-see", chromedp.ByQuery),
		chromedp.TextContent(item(refundID)+" .approvers", &text, chromedp.ByQuery))
	if !strings.Contains(text, "1 of 2 approvals: fin1 approved") {
		t.Fatalf("after fin1's approval the card says %q", text)
	}
	fin2 := tab("fin2")
	fin2("fin2 approves the refund: done", chromedp.Click(item(refundID)+" button.approve", chromedp.ByQuery),
		chromedp.WaitNotPresent(item(refundID), chromedp.ByQuery))

	status := func(id string) map[string]any {
		var s map[string]any
		testwait.For(t, 20*time.Second, "session "+id+" to complete", func() bool {
			_, s = apiCall(t, "GET", base+"/v1/sessions/"+id, tokens["fin2"], "")
			return s["status"] == "completed"
		})
		return s
	}
	done := status(refundID)
	_, events := apiCall(t, "GET", base+"/v1/sessions/"+refundID+"/events", tokens["fin2"], "")
	started := 0
	for _, ev := range events["events"].([]any) {
		if ev.(map[string]any)["type"] == "tool_started" {
			started++
		}
	}
	if started != 1 || !strings.Contains(done["output"].(string), "5000") {
		t.Fatalf("the refund ran %d times; output %v", started, done["output"])
	}
	status(deployID)
}
