package oracle

import (
	"math/rand"
	"strconv"
)

// Forms generated from the grammars the two texts rest on (JSON, RFC
// 8259; XML 1.0; HTTP, RFC 9110 and URIs, RFC 3986; the sign's scheme,
// CONTRACT 1; the hexadecimal identifiers, published 2.1 and 2.2): not one
// hand-picked instance of a forbidden form, but the grammar's near misses,
// each production broken in each way it can be, in the manner of
// JSONTestSuite (y_ must accept, n_ must reject, i_ the implementation's
// choice) and the W3C XML conformance suite. Each form carries the
// oracle's verdict and the sentence that decides it; a form the texts
// leave to the implementation is Open, and gwconform only probes it.

// NearMiss is one generated form with the oracle's verdict on it.
type NearMiss struct {
	// Slug is stable and unique within its generator: check IDs are built
	// from it.
	Slug, Title string
	// Text is the form itself: a number's literal, a method, a path, a
	// sign, an identifier. Edit, where set, writes the form into a valid
	// body instead.
	Text string
	Edit func(valid string) string
	// Verdict is the oracle's: OK (an allowed form), a refusal with its
	// quote, or Open.
	Verdict Verdict
	// Inference, for a MUST that rests on an inference from a published
	// sentence rather than on its letter, says the inference; it is
	// written beside the quote.
	Inference string
}

// Generator names a family of generated forms, for docs/checks.md: the
// grammar it walks and how many forms it generates in all (Size, the
// Open ones included) against how many decided forms one run sends
// (Sent: without the Open ones, which are only probed, and smaller where
// the family is sampled with the run's seed).
type Generator struct {
	Name, Grammar string
	Size, Sent    int
}

// Generators are every generator of the oracle, with the sizes of their
// families for the demo fleet's values.
func Generators() []Generator {
	count := func(ms []NearMiss, open bool) int {
		n := 0
		for _, m := range ms {
			if m.Verdict.Open == open {
				n++
			}
		}
		return n
	}
	// Every field of every operation: the envelope's five in each of the
	// three, sn and type, and each type's own fields (command), message's
	// two, sn and name (update name).
	fieldsTwice := 3*len(Envelope) + 2 + 2 + 2
	for _, t := range Types {
		fieldsTwice += len(t.Fields)
	}
	sign := PositionChanges("0123456789abcdef0123456789abcdef", rand.New(rand.NewSource(1)))
	return []Generator{
		{"json-number", "RFC 8259 section 6: number = [ minus ] int [ frac ] [ exp ], each production broken, for every numeric field",
			len(JSONNumberNearMisses(51)), len(JSONNumberNearMisses(51))},
		{"json-text", "RFC 8259 sections 2, 7, 8: structural tokens, white space, strings and their escapes, encoding",
			len(JSONTextNearMisses()), count(JSONTextNearMisses(), false)},
		{"xml-document", "XML 1.0: prolog, XML declaration, DOCTYPE in every form, entities, well-formedness",
			len(XMLDocumentNearMisses()), count(XMLDocumentNearMisses(), false)},
		{"xml-field-twice", "XML 1.0 element content under published 2.1 (one child element per field): every field's element given twice",
			fieldsTwice, fieldsTwice},
		{"http-method", "RFC 9110 section 9: every registered method, an unknown token, a method in lower case",
			len(MethodNearMisses()), count(MethodNearMisses(), false)},
		{"http-path", "RFC 3986 section 3.3 and 6.2: each path's segments in another letter case, an encoded slash, a suffix",
			len(PathNearMisses("/v1/services/gateway/command")), count(PathNearMisses("/v1/services/gateway/command"), false)},
		{"sign-inputs", "CONTRACT 1: md5 of api_key + secret + timestamp; every proper subset and every other order of its inputs, separators",
			len(SignInputForms()), len(SignInputForms())},
		{"sign-position", "published 2.1 (32 hexadecimal characters): one character changed at each of the 32 positions to each other hexadecimal digit",
			32 * 15, len(sign)},
		{"id-position", "published 2.1, 2.2 (24, 12, 32 hexadecimal characters): one character changed at each position of myservice_id, mac and sn",
			(24 + 12 + 32) * 15, 24 + 12 + 32},
	}
}

// hexDigits are the hexadecimal digits in lower case.
const hexDigits = "0123456789abcdef"

// otherHex is a hexadecimal digit other than c (either case), drawn
// from r.
func otherHex(c byte, r *rand.Rand) byte {
	lc := c
	if 'A' <= c && c <= 'F' {
		lc = c - 'A' + 'a'
	}
	for {
		d := hexDigits[r.Intn(16)]
		if d != lc {
			return d
		}
	}
}

// PositionChanges are v with one hexadecimal character changed at each
// position, to another digit (not another letter case of the same one:
// hex ids are read in either case, CONTRACT 2), drawn from r: of the
// len(v)*15 such changes, one per position. Slugs are position-NN,
// counted from 00.
func PositionChanges(v string, r *rand.Rand) []NearMiss {
	out := make([]NearMiss, 0, len(v))
	for i := 0; i < len(v); i++ {
		b := []byte(v)
		b[i] = otherHex(b[i], r)
		out = append(out, NearMiss{Slug: PositionSlug(i), Title: "one character changed at position " + strconv.Itoa(i+1) + " of " + strconv.Itoa(len(v)),
			Text: string(b)})
	}
	return out
}

// PositionSlug is the slug of a change at position i (from 0).
func PositionSlug(i int) string {
	s := strconv.Itoa(i)
	if i < 10 {
		s = "0" + s
	}
	return "position-" + s
}
