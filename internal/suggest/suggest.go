// Package suggest finds the name a user probably meant, for "did you mean"
// hints in configuration and request errors.
package suggest

import "strings"

// Closest returns the candidate nearest to name: a case-insensitive match,
// or the one at the smallest edit distance if that is at most 2; "" when
// none is close.
func Closest(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if strings.EqualFold(c, name) {
			return c
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Hint is `; did you mean "x"?` for the candidate closest to name, to end
// an error message with, or "" when none is close (or name is one).
func Hint(name string, candidates []string) string {
	if s := Closest(name, candidates); s != "" && s != name {
		return `; did you mean "` + s + `"?`
	}
	return ""
}
