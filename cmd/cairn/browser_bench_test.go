package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// BenchmarkInboxFirstRender measures the web page with 1,000 pending
// interrupts: the bytes of the page's own files and of the data it loads,
// and the time from navigation to an inbox showing every item (the cards
// in the DOM). Run: go test -run XXX -bench InboxFirstRender -benchtime 5x ./cmd/cairn
func BenchmarkInboxFirstRender(b *testing.B) {
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		b.Skip("headless Chromium is not installed: apt-get install chromium")
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(browserConfig), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv("CAIRN_TEST_APPROVER", approverToken)
	b.Setenv("CAIRN_TEST_USER", userToken)
	_, base := serve(b, filepath.Join(dir, "cairn.yaml"))
	const pending = 1000
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for range pending {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			req, _ := http.NewRequest("POST", base+"/v1/sessions", stringsReader(`{"agent":"ops","input":"ship it"}`))
			req.Header.Set("Authorization", "Bearer "+approverToken)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()

	pageBytes := 0
	for _, p := range []string{"/", "/ui/app.js", "/ui/app.css"} {
		pageBytes += bodySize(b, base+p, "")
	}
	dataBytes := bodySize(b, base+"/v1/sessions?status=paused&limit=1000", approverToken)
	gzipBytes := bodySize(b, base+"/v1/sessions?status=paused&limit=1000", approverToken, "gzip")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath("/usr/bin/chromium"), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel2 := chromedp.NewContext(actx)
	defer cancel2()
	// Sign in once; the token stays in the tab's sessionStorage.
	if err := chromedp.Run(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.Evaluate(`sessionStorage.setItem('cairn.token', '`+approverToken+`')`, nil)); err != nil {
		b.Fatal(err)
	}
	// Usable: the count in the title says 1,000 and the first screenful of
	// items can be acted on. Complete: every card is in the page.
	var usable, complete time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		var n int
		err := chromedp.Run(ctx, chromedp.Navigate(base+"/#/inbox"), chromedp.Reload(),
			chromedp.Poll(`document.title.startsWith('(1000)') && document.querySelectorAll('#inbox article.item button.approve').length >= 20`, nil, chromedp.WithPollingInterval(2*time.Millisecond)))
		if err != nil {
			b.Fatal(err)
		}
		usable += time.Since(start)
		err = chromedp.Run(ctx, chromedp.Poll(`document.querySelectorAll('#inbox article.item').length >= 1000`, nil, chromedp.WithPollingInterval(2*time.Millisecond)),
			chromedp.Evaluate(`document.querySelectorAll('#inbox article.item').length`, &n))
		if err != nil || n < pending {
			b.Fatalf("%v: %d items", err, n)
		}
		complete += time.Since(start)
	}
	var phases map[string]float64
	if err := chromedp.Run(ctx, chromedp.Evaluate(`(() => { const n = performance.getEntriesByType('navigation')[0]; const r = performance.getEntriesByType('resource').filter(e => e.name.includes('/v1/sessions?status=paused')).pop(); return {dom: n.domContentLoadedEventEnd, dataStart: r ? r.startTime : -1, dataEnd: r ? r.responseEnd : -1, now: performance.now()}; })()`, &phases)); err != nil {
		b.Fatal(err)
	}
	b.Logf("page clock (ms): %v", phases)
	b.ReportMetric(float64(usable.Milliseconds())/float64(b.N), "ms/usable-inbox")
	b.ReportMetric(float64(complete.Milliseconds())/float64(b.N), "ms/all-cards")
	b.ReportMetric(float64(pageBytes), "page-bytes")
	b.ReportMetric(float64(dataBytes), "data-bytes")
	b.ReportMetric(float64(gzipBytes), "data-gzip-bytes")
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// bodySize is the length of url's body as sent (compressed if encoding asks).
func bodySize(b *testing.B, url, token string, encoding ...string) int {
	b.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if len(encoding) > 0 {
		req.Header.Set("Accept-Encoding", encoding[0])
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	return int(n)
}
