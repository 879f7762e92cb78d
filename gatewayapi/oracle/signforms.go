package oracle

import (
	"crypto/md5"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// The sign's grammar (CONTRACT 1): "lowercase hex MD5 of the UTF-8 bytes
// of `api_key + secret + timestamp` (plain concatenation, no
// separators)". Its near misses are the sign computed from every proper
// subset and every other order of its three inputs, or with separators
// between them (SignInputForms), and the right sign with one character
// changed at each of its 32 positions (PositionChanges). Every one is
// refused, 401 bad_signature (CONTRACT 1, SHOULD). A form made without
// the secret, and a changed character, MUST NOT be accepted: published 5
// makes the sign part of every request's authentication, and a sign
// anyone can compute without the secret, or one accepted though it
// differs from the right one, is never verified, so it is no sign.

// SignInput is the text a sign form hashes: its template with {api_key},
// {secret} and {timestamp} replaced.
func SignInput(template, apiKey, secret, timestamp string) string {
	return strings.NewReplacer("{api_key}", apiKey, "{secret}", secret, "{timestamp}", timestamp).Replace(template)
}

// SignOf is the lowercase hex MD5 of SignInput.
func SignOf(template, apiKey, secret, timestamp string) string {
	sum := md5.Sum([]byte(SignInput(template, apiKey, secret, timestamp)))
	return hex.EncodeToString(sum[:])
}

// SignTemplate is the md5 scheme's own template (CONTRACT 1).
const SignTemplate = "{api_key}{secret}{timestamp}"

func badSign(must bool, why, quote, inference string) (Verdict, string) {
	v := refuse(must, device.CodeBadSignature, device.FieldSign, why, quote)
	v.Status = http.StatusUnauthorized
	return v, inference
}

// SignPositionVerdict is the verdict on the right sign with one character
// changed.
func SignPositionVerdict() (Verdict, string) {
	return badSign(true, "the sign differs from the right one in one character", QuoteSignCarried,
		"published 5: a sign accepted though it differs from the right one is never verified, so no sign")
}

// SignInputForms are the md5 of every proper subset of api_key, secret
// and timestamp in every order, of the three in every other order, and
// of the three with a separator between them; Text is the template
// (SignInput). None is the right sign.
func SignInputForms() []NearMiss {
	// The three inputs of the md5 scheme, in its order.
	signInputs := []string{"api_key", "secret", "timestamp"}
	var out []NearMiss
	add := func(order []int, sep string) {
		var names, parts []string
		hasSecret := false
		for _, i := range order {
			names = append(names, signInputs[i])
			parts = append(parts, "{"+signInputs[i]+"}")
			hasSecret = hasSecret || i == 1
		}
		tmpl := strings.Join(parts, sep)
		if tmpl == SignTemplate {
			return
		}
		slug := strings.ReplaceAll(strings.Join(names, "-"), "_", "-")
		title := "md5 of " + strings.Join(names, " + ")
		switch {
		case len(order) == 0:
			slug, title = "empty", "md5 of nothing (the empty text)"
		case sep != "":
			slug += "-separated-" + map[string]string{":": "by-colons", "&": "by-ampersands", "+": "by-plus-signs", " ": "by-spaces"}[sep]
			title += ", separated by " + map[string]string{":": "colons", "&": "ampersands", "+": "plus signs", " ": "spaces"}[sep]
		}
		var v Verdict
		var inf string
		if hasSecret {
			v, inf = badSign(false, "a sign computed otherwise than md5 of api_key + secret + timestamp", QuoteSignMD5, "")
		} else {
			v, inf = badSign(true, "a sign computed without the secret", QuoteSignCarried,
				"published 5: a sign anyone computes without the secret authenticates nobody, so no sign")
		}
		out = append(out, NearMiss{Slug: slug, Title: title, Text: tmpl, Verdict: v, Inference: inf})
	}
	// Every sequence of distinct inputs: the empty one, the three alone,
	// the six pairs, the six orders of all three but the scheme's.
	var walk func(seq []int)
	walk = func(seq []int) {
		add(seq, "")
		for i := range signInputs {
			used := false
			for _, j := range seq {
				used = used || j == i
			}
			if !used {
				walk(append(append([]int(nil), seq...), i))
			}
		}
	}
	walk(nil)
	for _, sep := range []string{":", "&", "+", " "} {
		add([]int{0, 1, 2}, sep)
	}
	return out
}
