package suggest

import "testing"

func TestClosest(t *testing.T) {
	t.Parallel()
	known := []string{"agent", "input", "metadata", "wait"}
	for name, want := range map[string]string{"agnet": "agent", "Input": "input", "metdata": "metadata", "message": "", "w": ""} {
		if got := Closest(name, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", name, got, want)
		}
	}
}
