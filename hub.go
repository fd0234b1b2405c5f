package cairn

import "sync"

// hub fans a session's events out to in-process subscribers.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[chan Event]struct{}
}

const subscriberBuffer = 256

func (h *hub) subscribe(session string) (<-chan Event, func()) {
	ch := make(chan Event, subscriberBuffer)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]map[chan Event]struct{}{}
	}
	if h.subs[session] == nil {
		h.subs[session] = map[chan Event]struct{}{}
	}
	h.subs[session][ch] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if _, ok := h.subs[session][ch]; ok {
				delete(h.subs[session], ch)
				close(ch)
			}
			if len(h.subs[session]) == 0 {
				delete(h.subs, session)
			}
		})
	}
}

func (h *hub) publish(session string, ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[session] {
		select {
		case ch <- ev:
		default:
			// Too slow: close so it reloads from the store rather than miss events.
			delete(h.subs[session], ch)
			close(ch)
		}
	}
}
