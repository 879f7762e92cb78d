package catalog

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// The sentences of the CONTRACT that state a refusal's answer: its status,
// its error code, the field it names, a header, its format. The CONTRACT's
// preamble: "an answer's detail that neither text states (an error code
// or `field` not named here, a message's wording, a reason phrase) is
// never failed, at any level." A check judges a part of the answer only
// where one of these sentences states it; any other part is reported
// (an INFO observation inside the check), never failed.
// TestEveryExpectationHasItsSentence walks the catalog and keeps it so.
const (
	// SaidErrors is CONTRACT 4's error payload: its format, the status
	// field, the code, and (for a dimming out of range) the field.
	SaidErrors = "Errors: the same format as the request where it could be told, else JSON: " +
		"`{\"status\":\"error\",\"error\":{\"code\":\"invalid_field\",\"field\":\"dimming\",\"message\":\"dimming must be an integer from 1 to 100\"}}` " +
		"and in XML `<xml><status>error</status><error><code>…</code><field>…</field><message>…</message></error></xml>`."
	SaidValidation   = "Validation errors are 400 `invalid_field` / `missing_field` / `unexpected_field`."
	SaidMediaType    = "Anything else: 415 `unsupported_media_type`."
	SaidTypeMismatch = "Request `type` differs from the device's type: 409 `type_mismatch`."
)

// codeSaid is, for each error code the CONTRACT names, the sentences
// that state it with its status.
var codeSaid = map[string][]string{
	device.CodeInvalidField:         {SaidValidation},
	device.CodeMissingField:         {SaidValidation},
	device.CodeUnexpectedField:      {oracle.QuoteUnexpected, SaidValidation},
	device.CodeMalformedBody:        {oracle.QuoteMalformed},
	device.CodeUnsupportedMediaType: {SaidMediaType},
	device.CodeBodyTooLarge:         {oracle.QuoteBodyLimit},
	device.CodeNotFound:             {oracle.QuoteUnknownPath},
	device.CodeUnknownAPIKey:        {oracle.QuoteUnknownKey},
	device.CodeAccountMismatch:      {oracle.QuoteOtherAccount},
	device.CodeBadSignature:         {oracle.QuoteWrongSign},
	device.CodeStaleTimestamp:       {oracle.QuoteWindow},
	device.CodeGatewayNotFound:      {oracle.QuoteNoGateway},
	device.CodeDeviceNotFound:       {oracle.QuoteNoDevice},
	device.CodeTypeMismatch:         {SaidTypeMismatch},
}

// A Part is one thing a refusal's answer is expected to carry.
type Part struct {
	// What: "status", "code", "field", "Allow" or "format".
	What string
	// Want says the expected value in words: "400", "invalid_field or
	// malformed_body", "dimming", "POST", "json".
	Want string
	// Said are the sentences that state it; none for a detail no
	// sentence states, which the check reports and never fails.
	Said []string
}

// Info: the part is a detail no sentence states.
func (p Part) Info() bool { return len(p.Said) == 0 }

// Sentences are the sentences that state the answer to the case: its own
// (Expectation.Said) or else those of its codes, and the error payload's.
func (w Expectation) Sentences() []string {
	var out []string
	seen := map[string]bool{}
	add := func(ss ...string) {
		for _, s := range ss {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	if w.Said != nil {
		add(w.Said...)
	} else {
		for _, c := range w.Codes {
			add(codeSaid[c]...)
		}
	}
	add(SaidErrors)
	return out
}

// Parts are the parts of the answer the case expects in format f, each
// with the sentence that states it, or none.
func (w Expectation) Parts(f device.Format) []Part {
	ss := w.Sentences()
	find := func(token string) string {
		for _, s := range ss {
			if strings.Contains(s, token) {
				return s
			}
		}
		return ""
	}
	status := strconv.Itoa(w.Status)
	parts := []Part{{What: "status", Want: status}}
	for _, s := range ss {
		if regexp.MustCompile(`\b` + status + `\b`).MatchString(s) {
			parts[0].Said = []string{s}
			break
		}
	}
	if len(w.Codes) > 0 {
		p := Part{What: "code", Want: strings.Join(w.Codes, " or ")}
		for _, c := range w.Codes {
			s := find("`" + c + "`")
			if s == "" {
				p.Said = nil // one code no sentence names: the code is not judged
				break
			}
			if !slices.Contains(p.Said, s) {
				p.Said = append(p.Said, s)
			}
		}
		parts = append(parts, p)
	}
	if w.Field != "" {
		p := Part{What: "field", Want: w.WireField(f)}
		for _, c := range w.Codes {
			if s := find(`"code":"` + c + `","field":"` + w.Field + `"`); s != "" && w.WireField(f) == w.Field {
				p.Said = []string{s}
				break
			}
		}
		parts = append(parts, p)
	}
	parts = append(parts, Part{What: "format", Want: w.formatWant(f), Said: []string{SaidErrors}})
	if w.Allow {
		parts = append(parts, Part{What: "Allow", Want: "POST", Said: nonEmpty(find("`Allow: POST`"))})
	}
	return parts
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// ErrorFormats are the formats an error to the case may come in: the
// request's, or, where the service may not be able to tell the request's
// format (an unsupported Content-Type, a body of the other format), the
// request's, the other one or JSON, as the service reads it (CONTRACT 4:
// "the same format as the request where it could be told, else JSON").
func (w Expectation) ErrorFormats(f device.Format) []device.Format {
	if w.JSONError || w.OtherFormat {
		return []device.Format{device.JSON, device.XML}
	}
	return []device.Format{f}
}

func (w Expectation) formatWant(f device.Format) string {
	var names []string
	for _, g := range w.ErrorFormats(f) {
		names = append(names, g.String())
	}
	return strings.Join(names, " or ")
}

// methodRefused is the answer to a method other than POST: CONTRACT 2
// states its status and its Allow header, and no code.
func methodRefused(w Expectation) Expectation {
	w.Allow = true
	w.Said = []string{oracle.QuoteMethodOther}
	return w
}
