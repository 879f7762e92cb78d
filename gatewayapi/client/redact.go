package client

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Markers stand in the reports for what must not be written there: the
// published interface's own placeholders (section 2.1).
const (
	SignMarker   = "<SIGNATURE>"
	APIKeyMarker = "<API_KEY>"
)

// fieldFinder finds one field's value in a raw body, in either format, as
// our encoder and the published examples write it: "name":"value" in JSON,
// <name>value</name> in XML. It matches what the regular expression
//
//	("name"\s*:\s*)"((?:[^"\\]|\\.)*)"|(<name>)([^<]*)</name>
//
// matches (fieldPattern; FuzzFieldFinder holds the two together), by hand:
// the suite masks and redacts every exchange it records, and the
// expression took a sixth of gwconform run's CPU.
type fieldFinder struct {
	quoted, open, close string
}

func fieldValue(name string) *fieldFinder {
	return &fieldFinder{quoted: `"` + name + `"`, open: "<" + name + ">", close: "</" + name + ">"}
}

// FindAllStringSubmatchIndex is regexp's, for the expression above: each
// match's start and end, then those of its four groups (-1 when a group
// took no part); group 2 (JSON) or 4 (XML) is the value.
func (f *fieldFinder) FindAllStringSubmatchIndex(body string, _ int) [][]int {
	var out [][]int
	for i := 0; i < len(body); {
		m := f.at(body, i)
		if m == nil {
			i = f.next(body, i+1)
			continue
		}
		out = append(out, m)
		i = m[1]
	}
	return out
}

// MatchString says whether the body holds the field at all.
func (f *fieldFinder) MatchString(body string) bool {
	for i := f.next(body, 0); i < len(body); i = f.next(body, i+1) {
		if f.at(body, i) != nil {
			return true
		}
	}
	return false
}

// next is the first position from i where a match could start (len(body)
// when there is none).
func (f *fieldFinder) next(body string, i int) int {
	if i >= len(body) {
		return len(body)
	}
	rest := body[i:]
	j, k := strings.Index(rest, f.quoted), strings.Index(rest, f.open)
	switch {
	case j < 0 && k < 0:
		return len(body)
	case j < 0 || (k >= 0 && k < j):
		return i + k
	default:
		return i + j
	}
}

// at is the match that starts at i, or nil.
func (f *fieldFinder) at(body string, i int) []int {
	rest := body[i:]
	switch {
	case strings.HasPrefix(rest, f.quoted):
		j := i + len(f.quoted)
		j = skipSpace(body, j)
		if j >= len(body) || body[j] != ':' {
			return nil
		}
		j = skipSpace(body, j+1)
		if j >= len(body) || body[j] != '"' {
			return nil
		}
		open := j
		for j++; j < len(body); {
			switch body[j] {
			case '"':
				return []int{i, j + 1, i, open, open + 1, j, -1, -1, -1, -1}
			case '\\':
				// \\. : any character but a newline, a whole UTF-8 one.
				if j+1 >= len(body) || body[j+1] == '\n' {
					return nil
				}
				_, n := utf8.DecodeRuneInString(body[j+1:])
				j += 1 + n
			default:
				j++
			}
		}
		return nil
	case strings.HasPrefix(rest, f.open):
		v := i + len(f.open)
		end := strings.IndexByte(body[v:], '<')
		if end < 0 || !strings.HasPrefix(body[v+end:], f.close) {
			return nil
		}
		return []int{i, v + end + len(f.close), -1, -1, -1, -1, i, v, v, v + end}
	}
	return nil
}

// skipSpace skips regexp's \s: tab, newline, form feed, carriage return
// and space.
func skipSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case '\t', '\n', '\f', '\r', ' ':
			i++
		default:
			return i
		}
	}
	return i
}

// anyField finds every "name":"value" (JSON) and <name>value</name> (XML)
// in a raw body, as fieldValue does for one name.
var anyField = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"\s*:\s*"((?:[^"\\]|\\.)*)"|<([A-Za-z_][A-Za-z0-9_.-]*)>([^<]*)</([A-Za-z_][A-Za-z0-9_.-]*)>`)

// looseFields are the fields a body that cannot be decoded shows, in
// order, read by anyField: enough to sign it as it was signed when sent.
func looseFields(body string) []device.Pair {
	var out []device.Pair
	for _, m := range anyField.FindAllStringSubmatch(body, -1) {
		switch {
		case m[1] != "":
			k, v := m[1], m[2]
			if uk, err := strconv.Unquote(`"` + k + `"`); err == nil {
				k = uk
			}
			if uv, err := strconv.Unquote(`"` + v + `"`); err == nil {
				v = uv
			}
			out = append(out, device.Pair{Key: k, Value: device.Str(v)})
		case m[3] != "" && m[3] == m[5]:
			v := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&apos;", "'", "&amp;", "&").Replace(m[4])
			out = append(out, device.Pair{Key: m[3], Value: device.Str(v)})
		}
	}
	return out
}

var (
	signValue      = fieldValue(device.FieldSign)
	apiKeyValue    = fieldValue(device.FieldAPIKey)
	timestampValue = fieldValue(device.FieldTimestamp)
)

// replaceValue sets every value of a field in a raw body to v, in one pass
// over the body.
func replaceValue(f *fieldFinder, body, v string) string {
	ms := f.FindAllStringSubmatchIndex(body, -1)
	if ms == nil {
		return body
	}
	var b strings.Builder
	b.Grow(len(body) + len(ms)*len(v))
	last := 0
	for _, m := range ms {
		b.WriteString(body[last:m[0]])
		if m[2] >= 0 { // JSON: group 1 is `"name":`
			b.WriteString(body[m[2]:m[3]])
			b.WriteString(`"` + v + `"`)
		} else { // XML: group 3 is <name>
			open := body[m[6]:m[7]]
			b.WriteString(open)
			b.WriteString(xmlEscape(v))
			b.WriteString("</" + open[1:])
		}
		last = m[1]
	}
	b.WriteString(body[last:])
	return b.String()
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func xmlEscape(s string) string { return xmlEscaper.Replace(s) }

// RedactSign replaces every sign value in a request body with SignMarker:
// reports keep what was sent but never a sign, which could be replayed
// while its timestamp is in the window.
func RedactSign(body string) string { return replaceValue(signValue, body, SignMarker) }

// MaskSuffix ends a masked api_key: its first four characters, then this.
const MaskSuffix = "…"

// MaskAPIKey is an api_key as reports show it: its first four characters
// and MaskSuffix, enough to tell the fleet's keys apart, not to use one.
func MaskAPIKey(k string) string {
	r := []rune(k)
	if len(r) <= 4 {
		return MaskSuffix
	}
	return string(r[:4]) + MaskSuffix
}

// MaskAPIKeys masks every api_key value in a body (MaskAPIKey), in one
// pass; the markers stay as they are.
func MaskAPIKeys(body string) string {
	ms := apiKeyValue.FindAllStringSubmatchIndex(body, -1)
	if ms == nil {
		return body
	}
	var b strings.Builder
	b.Grow(len(body))
	last := 0
	for _, m := range ms {
		start, end := m[4], m[5] // JSON: group 2
		if start < 0 {
			start, end = m[8], m[9] // XML: group 4
		}
		v := body[start:end]
		if v == "" || v == APIKeyMarker || v == xmlEscape(APIKeyMarker) || strings.HasSuffix(v, MaskSuffix) {
			continue
		}
		b.WriteString(body[last:start])
		b.WriteString(MaskAPIKey(v))
		last = end
	}
	b.WriteString(body[last:])
	return b.String()
}

// Masked is the exchange with every api_key in its bodies masked
// (MaskAPIKeys).
func (e Exchange) Masked() Exchange {
	e.RequestBody = MaskAPIKeys(e.RequestBody)
	e.ResponseBody = MaskAPIKeys(e.ResponseBody)
	e.Earlier = each(e.Earlier, Exchange.Masked)
	return e
}

// each applies f to a copy of every exchange of a list (nil stays nil).
func each(list []Exchange, f func(Exchange) Exchange) []Exchange {
	if list == nil {
		return nil
	}
	out := make([]Exchange, len(list))
	for i, e := range list {
		out[i] = f(e)
	}
	return out
}

// Redacted is the exchange with its sign removed from the request body and
// any header that could carry a credential blanked; its Curl line then
// signs the body afresh.
func (e Exchange) Redacted() Exchange {
	e.RequestBody = RedactSign(e.RequestBody)
	if e.RequestHeaders != nil {
		h := make(map[string]string, len(e.RequestHeaders))
		for k, v := range e.RequestHeaders {
			if strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Cookie") {
				v = "<REDACTED>"
			}
			h[k] = v
		}
		e.RequestHeaders = h
	}
	e.Earlier = each(e.Earlier, Exchange.Redacted)
	return e
}

// Keys finds the api key and secret to sign with.
type Keys interface {
	// Secret is the secret of an api_key; ok is false for an unknown key.
	Secret(apiKey string) (secret string, ok bool)
	// KeyOf is the first api_key of an account, for bodies whose api_key
	// was replaced by APIKeyMarker.
	KeyOf(accountID string) (apiKey string, ok bool)
}

// Resign makes a recorded request body current: the timestamp becomes now
// (in loc), an api_key written as APIKeyMarker becomes the account's first
// key, and the sign is computed afresh over the result, with signer when
// given (a sign command) or by the md5 scheme with the key's secret.
// Everything else is kept byte for byte, so a malformed or unusual body
// stays what the check sent.
func Resign(ctx context.Context, body []byte, keys Keys, signer Signer, now time.Time, loc *time.Location) ([]byte, error) {
	s := string(body)
	f := device.JSON
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "<") {
		f = device.XML
	}
	if !timestampValue.MatchString(s) || !signValue.MatchString(s) {
		return nil, errors.New("the body has no timestamp or sign field to renew")
	}
	s = replaceValue(timestampValue, s, auth.Timestamp(now, loc))
	pairs, derr := codec.Decode(f, []byte(s))
	if derr != nil {
		// A body malformed on purpose (cut short, control twice, a wrong
		// root) is signed over the fields it shows, and otherwise kept
		// byte for byte: the request is the one the check sent.
		pairs = looseFields(s)
		if len(pairs) == 0 {
			return nil, fmt.Errorf("the body cannot be read as %s: %s", f, derr.Message)
		}
	}
	var apiKey, account string
	for _, p := range pairs {
		switch p.Key {
		case device.FieldAPIKey:
			apiKey = p.Value.Text
		case device.FieldAccount:
			account = p.Value.Text
		}
	}
	if prefix, ok := strings.CutSuffix(apiKey, MaskSuffix); ok && apiKey != APIKeyMarker {
		// A masked key: the fleet's key that starts so, the account's
		// first.
		k, ok := "", false
		if mk, has := keys.(interface {
			KeyWithPrefix(accountID, prefix string) (string, bool)
		}); has {
			k, ok = mk.KeyWithPrefix(strings.ToLower(account), prefix)
		}
		if !ok {
			return nil, fmt.Errorf("the fleet has no api key starting %q", prefix)
		}
		s = replaceValue(apiKeyValue, s, k)
		apiKey = k
		for i := range pairs {
			if pairs[i].Key == device.FieldAPIKey {
				pairs[i].Value.Text = k
			}
		}
	}
	if apiKey == APIKeyMarker || apiKey == "API_KEY_REDACTED" {
		k, ok := keys.KeyOf(strings.ToLower(account))
		if !ok {
			return nil, fmt.Errorf("the fleet has no api key for myservice_id %q", account)
		}
		s = replaceValue(apiKeyValue, s, k)
		apiKey = k
		for i := range pairs {
			if pairs[i].Key == device.FieldAPIKey {
				pairs[i].Value.Text = k
			}
		}
	}
	var fields []Field
	for _, p := range pairs {
		if p.Key != device.FieldSign {
			fields = append(fields, Field{Key: p.Key, Value: p.Value.Text})
		}
	}
	if signer == nil {
		secret, ok := keys.Secret(apiKey)
		if !ok {
			return nil, errors.New("the fleet has no secret for the body's api_key")
		}
		signer = MD5Signer{APIKey: apiKey, Secret: secret}
	}
	sign, err := signer.Sign(ctx, fields)
	if err != nil {
		return nil, err
	}
	return []byte(replaceValue(signValue, s, sign)), nil
}
