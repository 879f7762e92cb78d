package oracle

import (
	"net/http"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// HTTP's grammar around the three operations: the methods of RFC 9110
// section 9 and the paths of RFC 3986, each near miss of "POST
// {base_url}/v1/services/…" judged from the texts.

// methodRefused is the verdict on a request of an operation's path with a
// method other than POST: MUST where the method names another operation
// (published 1 "Every operation is a POST."), with CONTRACT 2's answer 405
// and Allow: POST.
func methodRefused(must bool, why, quote string) Verdict {
	v := refuse(must, device.CodeMethodNotAllowed, "", why, quote)
	v.Status = http.StatusMethodNotAllowed
	return v
}

// MethodNearMisses are every method RFC 9110 registers but POST, an
// unknown method token and POST in lower case (RFC 9110 9.1: "The method
// token is case-sensitive"), each sent to an operation's path: none of
// them is the operation. OPTIONS asks what the resource allows (RFC 9110
// 9.3.7) rather than for an operation, so only CONTRACT 2 answers it (405,
// SHOULD); the others MUST NOT be answered with success.
func MethodNearMisses() []NearMiss {
	var out []NearMiss
	const inf = "published 1: another method is not the operation"
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodConnect, http.MethodTrace, http.MethodPatch} {
		out = append(out, NearMiss{Slug: strings.ToLower(m), Title: "sent with " + m, Text: m,
			Verdict: methodRefused(true, m+" is not POST", QuoteEveryPOST), Inference: inf})
	}
	out = append(out,
		NearMiss{Slug: "options", Title: "sent with OPTIONS", Text: http.MethodOptions,
			Verdict: methodRefused(false, "OPTIONS: CONTRACT 2 answers every method other than POST with 405", QuoteMethodOther)},
		NearMiss{Slug: "unknown-token", Title: "sent with the method FETCH, which no RFC registers", Text: "FETCH",
			Verdict: methodRefused(true, "an unregistered method is not POST", QuoteEveryPOST), Inference: inf},
		NearMiss{Slug: "post-lower-case", Title: "sent with the method post, in lower case", Text: "post",
			Verdict:   methodRefused(true, "RFC 9110 9.1: the method token is case-sensitive; post is not POST", QuoteEveryPOST),
			Inference: "RFC 9110 9.1: the method token is case-sensitive, so post is not POST, not the operation"},
	)
	return out
}

// PathNearMisses are the near misses of an operation's path (RFC 3986
// section 3.3: a path is case-sensitive, its segments are separated by /
// and a percent-encoded / is data within a segment, not a separator; 6.2
// says which forms are equivalent): each segment in another letter case,
// an encoded slash, a suffix on the last segment, refused by CONTRACT 2
// ("Unknown path: 404 `not_found`.", SHOULD); and the forms RFC 3986
// calls equivalent or a faithful service may normalize (a trailing
// slash, dot segments, an empty segment, an encoded unreserved letter, a
// query), Open.
func PathNearMisses(path string) []NearMiss {
	var out []NearMiss
	unknown := func(slug, title, p string) {
		v := refuse(false, device.CodeNotFound, "", "not the path of an operation (RFC 3986: another path)", QuoteUnknownPath)
		v.Status = http.StatusNotFound
		out = append(out, NearMiss{Slug: slug, Title: title, Text: p, Verdict: v})
	}
	undecided := func(slug, title, p, why string) {
		out = append(out, NearMiss{Slug: slug, Title: title, Text: p, Verdict: open(why)})
	}
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, s := range segs {
		c := append([]string(nil), segs...)
		c[i] = strings.ToUpper(s[:1]) + s[1:]
		unknown("segment-"+string(rune('1'+i))+"-capitalized", "sent to its path with segment "+s+" capitalized", "/"+strings.Join(c, "/"))
	}
	last := strings.LastIndex(path, "/")
	unknown("encoded-slash", "sent to its path with its last / written %2F", path[:last]+"%2F"+path[last+1:])
	unknown("encoded-slash-lower-case", "sent to its path with its last / written %2f", path[:last]+"%2f"+path[last+1:])
	unknown("semicolon-parameter", "sent to its path with ;x after the last segment", path+";x")
	unknown("encoded-space-suffix", "sent to its path with %20 after the last segment", path+"%20")
	unknown("dot-suffix", "sent to its path with . after the last segment", path+".")
	undecided("trailing-slash", "sent to its path with a trailing /", path+"/",
		"neither text says whether a service reads a trailing / as the same path; many do")
	undecided("dot-segment", "sent to its path with a /./ segment", path[:last]+"/."+path[last:],
		"RFC 3986 5.2.4 removes dot segments; a service may read the path before or after")
	undecided("dot-dot-segment", "sent to its path with a /x/../ segment", path[:last]+"/x/.."+path[last:],
		"RFC 3986 5.2.4 removes dot segments; a service may read the path before or after")
	undecided("empty-segment", "sent to its path with // in place of one /", strings.Replace(path, "/", "//", 2)[1:],
		"neither text says whether a service merges empty segments")
	undecided("encoded-unreserved", "sent to its path with its last letter percent-encoded", path[:len(path)-1]+"%"+strings.ToUpper(hexByte(path[len(path)-1])),
		"RFC 3986 6.2.2.2: a percent-encoded unreserved character is equivalent to the character")
	undecided("query", "sent to its path with a query ?x=1", path+"?x=1",
		"neither text says what a query on an operation's path means")
	return out
}

func hexByte(c byte) string { return string([]byte{hexDigits[c>>4], hexDigits[c&15]}) }
