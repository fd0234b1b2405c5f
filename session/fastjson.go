package session

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// appendSimple appends s as encoding/json writes it, for the sessions most
// commits and answers write: no output JSON, error, metadata, fork origin
// or truncation, times encoding/json accepts, and interrupts in their
// common form (appendInterrupt). ok is false for any other session, and
// the callers encode it with the reflective encoder. With interruptsLast,
// "interrupts" comes last, recorded (without their Asks), as MarshalStored
// writes it; else in its place in the struct with their Asks, as
// MarshalJSON does.
//
// Why by hand: a runner writes the summary at nearly every commit and a
// server a session in nearly every answer; the reflective encoder took a
// tenth of BenchmarkTurn. encoding/json stays the reference:
// FuzzSessionJSON and TestAppendSimpleAgrees compare every byte.
func (s *Session) appendSimple(b []byte, interruptsLast bool) ([]byte, bool) {
	if s.OutputJSON != nil || s.Error != nil || len(s.Metadata) > 0 || s.ForkedFrom != nil ||
		len(s.Truncated) > 0 || !jsonTime(s.CreatedAt) || !jsonTime(s.UpdatedAt) ||
		s.LeaseExpiresAt != nil && !jsonTime(*s.LeaseExpiresAt) {
		return b, false
	}
	b = append(b, `{"id":`...)
	b = appendString(b, s.ID)
	if s.Nonce != "" {
		b = appendString(append(b, `,"nonce":`...), s.Nonce)
	}
	b = appendString(append(b, `,"agent":`...), s.Agent)
	b = appendString(append(b, `,"status":`...), string(s.Status))
	b = strconv.AppendInt(append(b, `,"seq":`...), s.Seq, 10)
	b = appendString(append(b, `,"output":`...), s.Output)
	b = append(b, `,"error":null`...)
	if s.Request != "" {
		b = appendString(append(b, `,"request":`...), s.Request)
	}
	if !interruptsLast {
		// As Interrupt.MarshalJSON writes them, in their common form.
		var ok bool
		if b, ok = appendInterruptList(append(b, `,"interrupts":`...), s.Interrupts, true); !ok {
			return b, false
		}
	}
	b = appendList(append(b, `,"stack":`...), s.Stack, func(b []byte, f StackFrame) []byte {
		b = appendString(append(b, `{"agent":`...), f.Agent)
		return append(appendString(append(b, `,"mode":`...), string(f.Mode)), '}')
	})
	b = appendList(append(b, `,"remembered":`...), s.Remembered, func(b []byte, r Remembered) []byte {
		b = appendString(append(b, `{"agent":`...), r.Agent)
		b = appendString(append(b, `,"tool":`...), r.Tool)
		if r.Action != "" {
			b = appendString(append(b, `,"action":`...), string(r.Action))
		}
		if r.Reason != "" {
			b = appendString(append(b, `,"reason":`...), r.Reason)
		}
		return append(b, '}')
	})
	if s.Owner != "" {
		b = appendString(append(b, `,"owner":`...), s.Owner)
	}
	if s.Tenant != "" {
		b = appendString(append(b, `,"tenant":`...), s.Tenant)
	}
	if s.LeaseOwner != "" {
		b = appendString(append(b, `,"lease_owner":`...), s.LeaseOwner)
	}
	if s.LeaseExpiresAt != nil {
		b = appendTime(append(b, `,"lease_expires_at":`...), *s.LeaseExpiresAt)
	}
	b = appendUsage(append(b, `,"usage":`...), s.Usage)
	b = appendTime(append(b, `,"created_at":`...), s.CreatedAt)
	b = appendTime(append(b, `,"updated_at":`...), s.UpdatedAt)
	if d := s.Definition; d != nil {
		b = appendString(append(b, `,"definition":{"hash":`...), d.Hash)
		b = strconv.AppendBool(append(b, `,"current":`...), d.Current)
		b = append(b, '}')
	}
	if interruptsLast {
		// As the log keeps them (recorded), in their common form.
		var ok bool
		if b, ok = appendInterruptList(append(b, `,"interrupts":`...), s.Interrupts, false); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// marshalSimple is appendSimple into a new slice of exactly the size
// written: the summary a store keeps lives as long as the session.
func (s *Session) marshalSimple(interruptsLast bool) ([]byte, bool) {
	var scratch [1024]byte
	b, ok := s.appendSimple(scratch[:0], interruptsLast)
	if !ok {
		return nil, false
	}
	return append([]byte(nil), b...), true
}

// jsonTime reports whether time.Time.MarshalJSON encodes t: a four-digit
// year and a zone offset under 24 hours.
func jsonTime(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, offset := t.Zone()
	return offset > -24*3600 && offset < 24*3600
}

// appendTime appends t as time.Time.MarshalJSON writes it (jsonTime(t)).
func appendTime(b []byte, t time.Time) []byte {
	return append(t.AppendFormat(append(b, '"'), time.RFC3339Nano), '"')
}

const hexDigits = "0123456789abcdef"

// appendList writes items as a JSON array, each by item, or null for a
// nil slice (as encoding/json does).
func appendList[T any](b []byte, items []T, item func([]byte, T) []byte) []byte {
	if items == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = item(b, it)
	}
	return append(b, ']')
}

// appendString appends s quoted as encoding/json writes a string: HTML
// characters, U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}
