package codec

import (
	"unicode/utf8"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// The fast readers below take the bodies well-behaved clients send, which
// is nearly every body under load, in one pass without a tokenizer: one
// copy of the body and no allocation per field. They accept a strict subset
// of what the encoding/json and encoding/xml readers accept and, for that
// subset, give exactly the same pairs; anything else (escapes, entities,
// comments, attributes, errors of any kind) makes them give up, and the
// standard readers then read the body and word the error. The differential
// tests in fast_test.go hold them to that.

// fastPairs is the capacity a control's pair slice starts with: the
// largest published request has 12 fields.
const fastPairs = 12

// fastJSON reads {"control":{...}} whose members are strings without
// escapes, numbers, true, false or null.
func fastJSON(body []byte) ([]device.Pair, bool) { return fastJSONInto(body, nil) }

// pairsOf is dst emptied, or a new slice of fastPairs when dst has no room.
func pairsOf(dst []device.Pair) []device.Pair {
	if cap(dst) == 0 {
		return make([]device.Pair, 0, fastPairs)
	}
	return dst[:0]
}

// fastJSONInto is fastJSON appending to dst's storage.
func fastJSONInto(body []byte, dst []device.Pair) ([]device.Pair, bool) {
	p := scanner{s: string(body)}
	if !p.skip('{') {
		return nil, false
	}
	if key, ok := p.jsonString(); !ok || key != "control" || !p.skip(':') || !p.skip('{') {
		return nil, false
	}
	pairs := pairsOf(dst)
	if !p.skip('}') {
		for {
			key, ok := p.jsonString()
			if !ok || !p.skip(':') {
				return nil, false
			}
			v, ok := p.jsonValue()
			if !ok {
				return nil, false
			}
			pairs = append(pairs, device.Pair{Key: key, Value: v})
			if p.skip(',') {
				continue
			}
			if p.skip('}') {
				break
			}
			return nil, false
		}
	}
	if !p.skip('}') {
		return nil, false
	}
	p.space()
	return pairs, p.i == len(p.s)
}

type scanner struct {
	s string
	i int
}

// space skips JSON white space (XML's is the same four characters).
func (p *scanner) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// skip skips white space and then c, if c is next.
func (p *scanner) skip(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// jsonString reads a string without escapes or control characters.
func (p *scanner) jsonString() (string, bool) {
	if !p.skip('"') {
		return "", false
	}
	j := p.i
	// Eight bytes at a time while none ends the plain run (most strings
	// of a request are 12 to 32 characters), then byte by byte.
	for j+8 <= len(p.s) && plain8(le64(p.s[j:])) {
		j += 8
	}
	for j < len(p.s) && jsonPlain[p.s[j]] {
		j++
	}
	if j < len(p.s) && p.s[j] == '"' {
		s := p.s[p.i:j]
		p.i = j + 1
		return s, true
	}
	return "", false // an escape, a control character or no end
}

// plain8 reports whether none of the eight bytes of w is '"', '\\' or a
// control character below 0x20, the bytes that jsonPlain leaves out. Each
// test is exact for "some byte is": (x-0x01…)&^x&0x80… is nonzero exactly
// when a byte of x is zero, and (w-0x20…)&^w&0x80… when a byte of w is
// below 0x20.
func plain8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := w ^ (ones * '"')
	b := w ^ (ones * '\\')
	return ((q-ones)&^q|(b-ones)&^b|(w-ones*0x20)&^w)&highs == 0
}

// le64 is the eight bytes at the start of s, little-endian: one load.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// jsonPlain holds the bytes a string without escapes runs over: all but
// '"', '\\' and the control characters below 0x20.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// xmlPlain holds the bytes xmlText passes over without a closer look:
// ASCII text but '<', '&', '>', with tab and line feed.
var xmlPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '<' && c != '&' && c != '>'
	}
	t['\t'], t['\n'] = true, true
	return t
}()

func (p *scanner) jsonValue() (device.Value, bool) {
	p.space()
	if p.i >= len(p.s) {
		return device.Value{}, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		s, ok := p.jsonString()
		return device.Value{Text: s, Kind: device.String}, ok
	case c == '-' || '0' <= c && c <= '9':
		n, ok := p.jsonNumber()
		return device.Value{Text: n, Kind: device.Number}, ok
	case p.word("true"), p.word("false"):
		return device.Value{Text: "a boolean", Kind: device.Other}, true
	case p.word("null"):
		return device.Value{Text: "null", Kind: device.Other}, true
	}
	return device.Value{}, false
}

// word skips w when it is next and not followed by more letters.
func (p *scanner) word(w string) bool {
	end := p.i + len(w)
	if end > len(p.s) || p.s[p.i:end] != w || end < len(p.s) && isLetter(p.s[end]) {
		return false
	}
	p.i = end
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// jsonNumber reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and
// returns it as written.
func (p *scanner) jsonNumber() (string, bool) {
	s, i := p.s, p.i
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return "", false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return "", false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return "", false
		}
	}
	// A number runs into the next delimiter; "01" or "1x" is not one.
	if i < len(s) {
		switch s[i] {
		case ',', '}', ' ', '\t', '\n', '\r':
		default:
			return "", false
		}
	}
	n := s[p.i:i]
	p.i = i
	return n, true
}

// xmlDeclarations are the declarations fastXML accepts, each exactly.
var xmlDeclarations = []string{
	`<?xml version="1.0" encoding="UTF-8"?>`,
	`<?xml version="1.0" encoding="utf-8"?>`,
	`<?xml version="1.0"?>`,
}

// fastXML reads <xml><control><name>text</name>...</control></xml>, with
// an optional declaration and white space between elements, whose names
// are ASCII words and whose text has no markup, entity or carriage return.
func fastXML(body []byte) ([]device.Pair, bool) { return fastXMLInto(body, nil) }

// fastXMLInto is fastXML appending to dst's storage.
func fastXMLInto(body []byte, dst []device.Pair) ([]device.Pair, bool) {
	p := scanner{s: string(body)}
	for _, d := range xmlDeclarations {
		if len(p.s) >= len(d) && p.s[:len(d)] == d {
			p.i = len(d)
			break
		}
	}
	if !p.tag("xml", false) || !p.tag("control", false) {
		return nil, false
	}
	pairs := pairsOf(dst)
	for {
		p.space()
		if p.tag("control", true) {
			break
		}
		name, ok := p.startTag()
		if !ok {
			return nil, false
		}
		text, ok := p.xmlText()
		if !ok || !p.endTag(name) {
			return nil, false
		}
		pairs = append(pairs, device.Pair{Key: name, Value: device.Value{Text: text, Kind: device.String}})
	}
	if !p.tag("xml", true) {
		return nil, false
	}
	p.space()
	return pairs, p.i == len(p.s)
}

// tag skips white space and then <name> (or </name> when end is set).
func (p *scanner) tag(name string, end bool) bool {
	p.space()
	open := "<"
	if end {
		open = "</"
	}
	j := p.i + len(open) + len(name) + 1
	if j > len(p.s) || p.s[p.i:p.i+len(open)] != open || p.s[p.i+len(open):j-1] != name || p.s[j-1] != '>' {
		return false
	}
	p.i = j
	return true
}

// startTag reads <name> without attributes; the name is an ASCII word.
func (p *scanner) startTag() (string, bool) {
	if p.i >= len(p.s) || p.s[p.i] != '<' {
		return "", false
	}
	start := p.i + 1
	j := start
	for j < len(p.s) && isNameByte(p.s[j], j == start) {
		j++
	}
	if j == start || j >= len(p.s) || p.s[j] != '>' {
		return "", false
	}
	p.i = j + 1
	return p.s[start:j], true
}

func (p *scanner) endTag(name string) bool {
	j := p.i + 2 + len(name) + 1
	if j > len(p.s) || p.s[p.i] != '<' || p.s[p.i+1] != '/' || p.s[p.i+2:j-1] != name || p.s[j-1] != '>' {
		return false
	}
	p.i = j
	return true
}

func isNameByte(c byte, first bool) bool {
	switch {
	case isLetter(c) || c == '_':
		return true
	case !first && ('0' <= c && c <= '9' || c == '-' || c == '.'):
		return true
	}
	return false
}

// xmlText reads text up to the next '<': characters XML allows, no
// entity, no carriage return (the XML reader rewrites it) and no "]]>".
func (p *scanner) xmlText() (string, bool) {
	s := p.s
	for j := p.i; j < len(s); {
		if xmlPlain[s[j]] {
			j++
			continue
		}
		c := s[j]
		switch {
		case c == '<':
			t := s[p.i:j]
			p.i = j
			return t, true
		case c == '&' || c == '\r' || c < 0x20 && c != '\t' && c != '\n':
			return "", false
		case c == '>' && j >= 2 && s[j-1] == ']' && s[j-2] == ']':
			return "", false
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[j:])
			if r == utf8.RuneError || r == 0xFFFE || r == 0xFFFF {
				return "", false
			}
			j += n
			continue
		}
		j++
	}
	return "", false
}
