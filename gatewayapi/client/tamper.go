package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Tamper says what a check made wrong on purpose in the parts of a request
// a report redacts or a line renews (the sign, the timestamp, the
// api_key), so that a line that sends the request again renews only the
// parts the check left valid: a wrong sign stays wrong, a stale
// timestamp stale. A request with no Tamper is valid in those parts.
type Tamper struct {
	// SignAt, from 1, is the one position at which the sign departs from
	// the valid one, and SignTo the hexadecimal digit written there (a test
	// request's sign is no secret). A line signs afresh and changes that
	// position to SignTo (to another digit where the fresh sign has SignTo
	// there already).
	SignAt int    `json:"sign_at,omitempty"`
	SignTo string `json:"sign_to,omitempty"`
	// Sign is a sign sent as it is, made from no key or secret (a
	// constant).
	Sign string `json:"sign_as,omitempty"`
	// Offset is how far from the clock the timestamp was set (a stale or
	// future timestamp, a window's edge), which a line keeps.
	Offset time.Duration `json:"timestamp_offset_ns,omitempty"`
	// KeepTimestamp: the timestamp was written by hand (a broken form) and
	// a line sends it as it is.
	KeepTimestamp bool `json:"keep_timestamp,omitempty"`
	// APIKey is an api_key of no account, sent as it is and signed with the
	// secret of the account's first key.
	APIKey string `json:"api_key,omitempty"`
	// Unrepeatable says why no line can make the request afresh (its sign
	// was made with a secret the report must not hold); the check itself
	// can be run again (gwconform replay).
	Unrepeatable string `json:"unrepeatable,omitempty"`
}

// Describe is the tampering in words, for a report and a replay.
func (t *Tamper) Describe() string {
	if t == nil {
		return ""
	}
	var parts []string
	switch {
	case t.SignAt > 0:
		parts = append(parts, fmt.Sprintf("the sign is the valid one with its character %d of 32 changed to %q", t.SignAt, t.SignTo))
	case t.Sign != "":
		parts = append(parts, fmt.Sprintf("the sign is %s, made from no key or secret", t.Sign))
	}
	switch {
	case t.KeepTimestamp:
		parts = append(parts, "the timestamp is sent as written")
	case t.Offset != 0:
		parts = append(parts, "the timestamp is the clock "+offsetWords(t.Offset))
	}
	if t.APIKey != "" {
		parts = append(parts, fmt.Sprintf("the api_key %q belongs to no account", t.APIKey))
	}
	if t.Unrepeatable != "" {
		parts = append(parts, t.Unrepeatable)
	}
	return "on purpose: " + strings.Join(parts, "; ")
}

func offsetWords(d time.Duration) string {
	if d < 0 {
		return (-d).String() + " ago"
	}
	return d.String() + " ahead"
}

// Args are the gwconform sign flags that keep the tampering when a line
// signs the body afresh.
func (t *Tamper) Args() []string {
	if t == nil {
		return nil
	}
	var a []string
	switch {
	case t.SignAt > 0:
		a = append(a, "--sign-at", strconv.Itoa(t.SignAt)+":"+t.SignTo)
	case t.Sign != "":
		a = append(a, "--sign-as", t.Sign)
	}
	switch {
	case t.KeepTimestamp:
		a = append(a, "--keep-timestamp")
	case t.Offset != 0:
		a = append(a, "--timestamp-offset", t.Offset.String())
	}
	if t.APIKey != "" {
		a = append(a, "--api-key-as", t.APIKey)
	}
	return a
}

// ParseSignAt reads a --sign-at value: POSITION:DIGIT, position from 1.
func ParseSignAt(v string) (at int, to string, err error) {
	p, d, ok := strings.Cut(v, ":")
	at, aerr := strconv.Atoi(p)
	if !ok || aerr != nil || at < 1 || at > 32 || len(d) != 1 || !strings.Contains(hexDigits, strings.ToLower(d)) {
		return 0, "", fmt.Errorf("--sign-at %q: want POSITION:DIGIT, a position from 1 to 32 and one hexadecimal digit", v)
	}
	return at, strings.ToLower(d), nil
}

const hexDigits = "0123456789abcdef"

var accountValue = fieldValue(device.FieldAccount)

// ResignTampered is Resign that keeps t's tampering: only the parts the
// check left valid are made afresh.
func ResignTampered(ctx context.Context, body []byte, keys Keys, signer Signer, now time.Time, loc *time.Location, t *Tamper) ([]byte, error) {
	if t == nil {
		return Resign(ctx, body, keys, signer, now, loc)
	}
	if t.Unrepeatable != "" {
		return nil, errors.New("this request cannot be made afresh: " + t.Unrepeatable)
	}
	s := string(body)
	if !timestampValue.MatchString(s) || !signValue.MatchString(s) {
		return nil, errors.New("the body has no timestamp or sign field to renew")
	}
	var written string
	if t.KeepTimestamp {
		written = fieldText(timestampValue, s)
	}
	if t.APIKey != "" {
		k, secret, err := accountKey(s, keys)
		if err != nil {
			return nil, err
		}
		s = replaceValue(apiKeyValue, s, k)
		out, err := Resign(ctx, []byte(s), keys, MD5SignerOr(signer, t.APIKey, secret), now.Add(t.Offset), loc)
		if err != nil {
			return nil, err
		}
		s = replaceValue(apiKeyValue, string(out), t.APIKey)
		if signer == nil {
			// The md5 sign of the key as sent, with the account's secret.
			ts := fieldText(timestampValue, s)
			s = replaceValue(signValue, s, auth.Sign(t.APIKey, secret, ts))
		}
	} else {
		out, err := Resign(ctx, body, keys, signer, now.Add(t.Offset), loc)
		if err != nil {
			return nil, err
		}
		s = string(out)
	}
	if t.KeepTimestamp {
		s = replaceValue(timestampValue, s, written)
		if t.SignAt == 0 && t.Sign == "" && signer == nil && t.APIKey == "" {
			// The sign of the timestamp as written, as the check sent it.
			k := fieldText(apiKeyValue, s)
			if secret, ok := keys.Secret(k); ok {
				s = replaceValue(signValue, s, auth.Sign(k, secret, written))
			}
		}
	}
	switch {
	case t.SignAt > 0:
		sign := []byte(fieldText(signValue, s))
		if len(sign) < t.SignAt {
			return nil, fmt.Errorf("the fresh sign is %d characters long, shorter than position %d", len(sign), t.SignAt)
		}
		to := t.SignTo[0]
		if c := sign[t.SignAt-1]; c == to || c == to-'a'+'A' {
			to = hexDigits[(strings.IndexByte(hexDigits, to)+1)%16]
		}
		sign[t.SignAt-1] = to
		s = replaceValue(signValue, s, string(sign))
	case t.Sign != "":
		s = replaceValue(signValue, s, t.Sign)
	}
	return []byte(s), nil
}

// MD5SignerOr is signer, or the md5 signer of key and secret when it is nil.
func MD5SignerOr(signer Signer, key, secret string) Signer {
	if signer != nil {
		return signer
	}
	return MD5Signer{APIKey: key, Secret: secret}
}

// accountKey is the first key of the body's account and its secret.
func accountKey(body string, keys Keys) (key, secret string, err error) {
	account := strings.ToLower(fieldText(accountValue, body))
	k, ok := keys.KeyOf(account)
	if !ok {
		return "", "", fmt.Errorf("the fleet has no api key for myservice_id %q", account)
	}
	secret, ok = keys.Secret(k)
	if !ok {
		return "", "", errors.New("the fleet has no secret for the account's first api_key")
	}
	return k, secret, nil
}

// fieldText is the first value of field f in body, as written ("" when
// absent).
func fieldText(f *fieldFinder, body string) string {
	ms := f.FindAllStringSubmatchIndex(body, 1)
	if len(ms) == 0 {
		return ""
	}
	m := ms[0]
	start, end := m[4], m[5]
	if start < 0 {
		start, end = m[8], m[9]
	}
	if start < 0 {
		return ""
	}
	return body[start:end]
}
