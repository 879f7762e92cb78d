// Package auth checks who sent a request: the api_key, the account it
// belongs to, the timestamp window and the sign, by the schemes of
// CONTRACT section 1. The harness uses Sign to sign what it sends.
package auth

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Scheme is how the sign is computed and checked.
type Scheme string

const (
	// MD5 is lowercase hex MD5 of api_key + secret + timestamp.
	MD5 Scheme = "md5"
	// FormatOnly checks only that the sign is 32 hex characters.
	FormatOnly Scheme = "format"
	// Off checks nothing; for demos.
	Off Scheme = "off"
)

// ParseScheme reads a scheme name; empty means MD5.
func ParseScheme(s string) (Scheme, error) {
	switch Scheme(strings.ToLower(s)) {
	case "", MD5:
		return MD5, nil
	case FormatOnly:
		return FormatOnly, nil
	case Off:
		return Off, nil
	}
	return "", fmt.Errorf("sign scheme must be md5, format or off, not %q", s)
}

// Sign computes the md5 sign of CONTRACT section 1.
func Sign(apiKey, secret, timestamp string) string {
	var buf [signBuf]byte
	sum := md5.Sum(append(append(append(buf[:0], apiKey...), secret...), timestamp...))
	return hex.EncodeToString(sum[:])
}

// signBuf holds api_key + secret + timestamp of usual lengths on the stack.
const signBuf = 256

// signMatches reports whether sign, in either letter case, is the md5 sign,
// comparing in constant time and without allocating: it runs on every
// request.
func signMatches(apiKey, secret, timestamp, sign string) bool {
	want := expectedSign(apiKey, secret, timestamp)
	if len(sign) != len(want) { // the length is public: 32 hex characters
		return false
	}
	// Eight bytes at a time: each word of sign with its letters A to Z
	// lowered, XORed with the word it must equal; the ORed differences
	// are zero only when all match, whatever byte differs.
	var diff uint64
	for i := 0; i < len(want); i += 8 {
		diff |= lowerASCII8(le64(sign[i:])) ^ binary.LittleEndian.Uint64(want[i:])
	}
	return diff == 0
}

// lowerASCII8 is the eight bytes of w with each of 'A' to 'Z' made lower
// case and every other byte as it is. The top bits are set aside first so
// that no sum carries into the next byte; a byte of 0x80 or more is left
// alone.
func lowerASCII8(w uint64) uint64 {
	const low7, top = 0x7F7F7F7F7F7F7F7F, 0x8080808080808080
	x := w & low7
	// b+0x3F has its top bit set when b >= 'A', b+0x25 when b > 'Z'.
	upper := (x + 0x3F3F3F3F3F3F3F3F) &^ (x + 0x2525252525252525) &^ w & top
	return w | upper>>2 // 0x80>>2 is 0x20, the case bit
}

// le64 is the eight bytes at the start of s, little-endian.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// A client signs every request of one second with the same timestamp,
// so the sign it must send is the same for all of them: the last one
// computed for an api_key is kept (in one of signMemos' slots, chosen by
// the api_key), and a request of the same api_key, secret and timestamp
// takes it without hashing again. The memo is keyed by all three inputs
// of the md5, so it can only ever give what md5 would; the comparison
// with the sign sent stays in constant time.
type signMemo struct {
	apiKey, secret, timestamp string
	want                      [2 * md5.Size]byte
}

var signMemos [64]atomic.Pointer[signMemo]

// expectedSign is the lowercase hex md5 sign of apiKey + secret +
// timestamp.
func expectedSign(apiKey, secret, timestamp string) [2 * md5.Size]byte {
	slot := &signMemos[memoSlot(apiKey)]
	if m := slot.Load(); m != nil && m.timestamp == timestamp && m.apiKey == apiKey && m.secret == secret {
		return m.want
	}
	var buf [signBuf]byte
	sum := md5.Sum(append(append(append(buf[:0], apiKey...), secret...), timestamp...))
	// The request's strings may share its body's memory: the memo keeps
	// copies of its own.
	m := &signMemo{apiKey: strings.Clone(apiKey), secret: strings.Clone(secret), timestamp: strings.Clone(timestamp)}
	hex.Encode(m.want[:], sum[:])
	slot.Store(m)
	return m.want
}

// memoSlot spreads api_keys over signMemos by their last bytes, where
// generated keys differ.
func memoSlot(apiKey string) int {
	n := len(apiKey)
	h := n
	if n >= 2 {
		h += int(apiKey[n-1]) + 7*int(apiKey[n-2])
	}
	return h % len(signMemos)
}

// Key is a registered api_key.
type Key struct {
	Secret    string
	AccountID string
}

// DefaultWindow is the timestamp tolerance when a fleet sets none.
const DefaultWindow = 300 * time.Second

// Authenticator checks a request's envelope against the registered keys.
// Its fields are set before use and not changed while requests are served.
type Authenticator struct {
	Keys   map[string]Key
	Scheme Scheme
	// Window is the allowed distance between the timestamp and now; zero
	// disables the check.
	Window time.Duration
	// Location is the zone timestamps are read in (UTC when nil).
	Location *time.Location
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// Check authenticates a parsed envelope.
func (a *Authenticator) Check(e *device.Envelope) *device.Error {
	key, ok := a.Keys[e.APIKey]
	if !ok {
		return device.Errorf(device.CodeUnknownAPIKey, device.FieldAPIKey, "api_key is not registered")
	}
	if key.AccountID != e.AccountID {
		return device.Errorf(device.CodeAccountMismatch, device.FieldAccount, "api_key does not belong to account %s", e.AccountID)
	}
	if a.Window > 0 {
		loc := a.Location
		if loc == nil {
			loc = time.UTC
		}
		// The timestamp's wall clock read in loc.
		t := e.Time
		sent := t
		if loc != time.UTC || t.Location() != time.UTC || t.Nanosecond() != 0 {
			year, month, day := t.Date()
			hour, minute, sec := t.Clock()
			sent = time.Date(year, month, day, hour, minute, sec, 0, loc)
		}
		now := time.Now()
		if a.Now != nil {
			now = a.Now()
		}
		if d := now.Sub(sent); d > a.Window || d < -a.Window {
			return device.Errorf(device.CodeStaleTimestamp, device.FieldTimestamp,
				"timestamp %s is %s from the server's clock; the window is ±%s", e.Timestamp, d.Round(time.Second), a.Window)
		}
	}
	if a.Scheme == MD5 || a.Scheme == "" {
		if !signMatches(e.APIKey, key.Secret, e.Timestamp, e.Sign) {
			return device.Errorf(device.CodeBadSignature, device.FieldSign, "sign does not match md5(api_key + secret + timestamp)")
		}
	}
	return nil
}

// Timestamp formats t as the published YYYYMMDDHHMMSS in loc (UTC if nil).
func Timestamp(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(device.TimestampLayout)
}
