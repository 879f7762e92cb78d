package client

import (
	"sort"
	"strings"
	"sync"

	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// SecretMarker stands for a fleet secret found in a text.
const SecretMarker = "<SECRET>"

// Credentials reads the api_key and sign values a raw body carries, in
// either format, however its member names are written (JSON escapes such
// as "\u0061pi_key" included): decoded when the body decodes, read field
// by field (looseFields) when it does not.
func Credentials(body string) (apiKeys, signs []string) {
	f := device.JSON
	if strings.HasPrefix(strings.TrimSpace(body), "<") {
		f = device.XML
	}
	pairs, derr := codec.Decode(f, []byte(body))
	if derr != nil {
		pairs = looseFields(body)
	}
	for _, p := range pairs {
		switch p.Key {
		case device.FieldAPIKey:
			apiKeys = append(apiKeys, p.Value.Text)
		case device.FieldSign:
			signs = append(signs, p.Value.Text)
		}
	}
	return apiKeys, signs
}

// ValueMasker replaces known secret values wherever they appear in a
// text, whatever field, message or echo holds them: api_keys by
// MaskAPIKey, secrets by SecretMarker, signs by SignMarker. Values of fewer
// than 5 characters are left to the pattern masking, which catches them
// in their fields.
type ValueMasker struct {
	pairs []string // old, new, ...
	r     *strings.Replacer
}

// minMaskedValue is the shortest value masked wherever it appears.
const minMaskedValue = 5

// Add registers values of one kind: "key", "secret" or "sign".
func (m *ValueMasker) Add(kind string, values ...string) {
	for _, v := range values {
		if len(v) < minMaskedValue || v == SignMarker || v == APIKeyMarker || strings.HasSuffix(v, MaskSuffix) {
			continue
		}
		with := SignMarker
		switch kind {
		case "key":
			with = MaskAPIKey(v)
		case "secret":
			with = SecretMarker
		}
		m.r = nil
		m.pairs = append(m.pairs, v, with)
		if x := xmlEscape(v); x != v {
			m.pairs = append(m.pairs, x, xmlEscape(with))
		}
		if strings.ToLower(v) != v && kind == "sign" {
			m.pairs = append(m.pairs, strings.ToLower(v), with)
		}
		if strings.ToUpper(v) != v && kind == "sign" {
			m.pairs = append(m.pairs, strings.ToUpper(v), with)
		}
	}
}

// Mask replaces every registered value in s.
func (m *ValueMasker) Mask(s string) string {
	if len(m.pairs) == 0 {
		return s
	}
	if m.r != nil {
		return m.r.Replace(s)
	}
	// Longest first, so that a value inside another is not replaced first.
	idx := make([]int, len(m.pairs)/2)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return len(m.pairs[2*idx[a]]) > len(m.pairs[2*idx[b]]) })
	ordered := make([]string, 0, len(m.pairs))
	for _, i := range idx {
		ordered = append(ordered, m.pairs[2*i], m.pairs[2*i+1])
	}
	m.r = strings.NewReplacer(ordered...)
	return m.r.Replace(s)
}

// Unmasked says whether a body still carries an api_key or a sign in
// clear once masked: a value in a form the masking did not read (an
// escaped value, say). Such a body is not shown.
func Unmasked(body string) bool {
	keys, signs := Credentials(body)
	for _, k := range keys {
		if k != "" && k != APIKeyMarker && !strings.HasSuffix(k, MaskSuffix) {
			return true
		}
	}
	for _, s := range signs {
		if s != "" && s != SignMarker {
			return true
		}
	}
	return false
}

// computed remembers the signs this process computed (MD5Signer,
// CommandSigner), the newest maxComputedSigns of them, so that the
// reports can mask each wherever a target echoed it.
var computed struct {
	mu    sync.Mutex
	set   map[string]struct{}
	order []string
	next  int
}

// maxComputedSigns bounds the signs remembered (about 12 MB).
const maxComputedSigns = 1 << 18

func rememberSign(sign string) {
	if len(sign) < minMaskedValue {
		return
	}
	computed.mu.Lock()
	defer computed.mu.Unlock()
	if computed.set == nil {
		computed.set = map[string]struct{}{}
	}
	if _, ok := computed.set[sign]; ok {
		return
	}
	if len(computed.order) < maxComputedSigns {
		computed.order = append(computed.order, sign)
	} else {
		delete(computed.set, computed.order[computed.next])
		computed.order[computed.next] = sign
		computed.next = (computed.next + 1) % maxComputedSigns
	}
	computed.set[sign] = struct{}{}
}

// ComputedSigns are the signs this process computed, the newest
// maxComputedSigns of them.
func ComputedSigns() []string {
	computed.mu.Lock()
	defer computed.mu.Unlock()
	return append([]string(nil), computed.order...)
}

// MaskComputedSigns replaces every sign this process computed wherever
// it stands in s as a word of its own (a run of letters and digits, or of
// base64's characters), in any letter case, by SignMarker: what a live
// console line needs, whose signs are computed while the run goes on.
func MaskComputedSigns(s string) string {
	computed.mu.Lock()
	defer computed.mu.Unlock()
	if len(computed.set) == 0 {
		return s
	}
	known := func(w string) bool {
		if len(w) < minMaskedValue {
			return false
		}
		for _, v := range []string{w, strings.ToLower(w), strings.ToUpper(w)} {
			if _, ok := computed.set[v]; ok {
				return true
			}
		}
		return false
	}
	alnum := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	b64 := func(c byte) bool { return alnum(c) || c == '+' || c == '/' || c == '=' || c == '-' || c == '_' }
	for _, in := range []func(byte) bool{alnum, b64} {
		var out strings.Builder
		changed := false
		for i := 0; i < len(s); {
			if !in(s[i]) {
				out.WriteByte(s[i])
				i++
				continue
			}
			j := i
			for j < len(s) && in(s[j]) {
				j++
			}
			if known(s[i:j]) {
				out.WriteString(SignMarker)
				changed = true
			} else {
				out.WriteString(s[i:j])
			}
			i = j
		}
		if changed {
			s = out.String()
		}
	}
	return s
}
