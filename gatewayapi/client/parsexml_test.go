package client

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"

	"github.com/antchfx/xmlquery"

	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// xmlqueryAnswer is what an answer body says read through xmlquery's tree:
// the reading parseXML keeps, without building the tree. Its two errors
// of its own are said in parseXML's words; the decoder's are the same.
func xmlqueryAnswer(body []byte) Answer {
	var a Answer
	doc, err := xmlquery.Parse(bytes.NewReader(body))
	if err != nil {
		msg := err.Error()
		if space, ok := strings.CutPrefix(msg, "xmlquery: invalid XML document, namespace "); ok {
			msg = "the namespace prefix " + strings.TrimSuffix(space, " is missing") + " is not declared"
		} else if msg == "xmlquery: invalid XML document" {
			msg = "no element"
		}
		a.ParseError = "not XML: " + msg
		return a
	}
	if at := oracle.RepeatedAttribute(body); at != "" {
		a.ParseError = "not XML: the attribute " + at + " is given twice in one tag"
		return a
	}
	child := func(n *xmlquery.Node, name string) *xmlquery.Node {
		if n == nil {
			return nil
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == xmlquery.ElementNode && (name == "" || c.Data == name) {
				return c
			}
		}
		return nil
	}
	text := func(n *xmlquery.Node) string {
		if n == nil {
			return ""
		}
		var b strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == xmlquery.TextNode || c.Type == xmlquery.CharDataNode {
				b.WriteString(c.Data)
			}
		}
		return strings.TrimSpace(b.String())
	}
	root := child(doc, "")
	if root == nil {
		a.ParseError = "not XML: no root element"
		return a
	}
	a.Status = text(child(root, "status"))
	if e := child(root, "error"); e != nil {
		a.ErrorCode, a.ErrorField, a.ErrorMessage = text(child(e, "code")), text(child(e, "field")), text(child(e, "message"))
	}
	return a
}

// xmlAnswerSeeds are answer bodies, well formed and not, that differ in
// every way parseXML reads: where status and the error fields sit, how
// often, in which namespace, with which text, comments, CDATA, processing
// instructions and encodings around them.
var xmlAnswerSeeds = []string{
	`<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>`,
	"<xml>\n  <status>\n    error\n  </status>\n  <error><code>bad_signature</code><field>sign</field><message>a &lt; b</message></error>\n</xml>",
	`<response><data><status>success</status></data></response>`,
	`<xml><status>one</status><status>two</status><error><code>a</code></error><error><code>b</code><field>f</field></error></xml>`,
	`<xml><status>su<b>x</b>cc<!-- c -->ess<?pi y?></status></xml>`,
	`<xml><status><![CDATA[suc]]>cess</status></xml>`,
	`<!-- first --><?xml-stylesheet href="a"?><xml><status>success</status></xml><!-- after -->`,
	`<xml><error><message>first</message><message>second</message></error></xml>`,
	`<a xmlns:p="u"><p:status>x</p:status></a>`,
	`<a><p:status>x</p:status></a>`,
	`<a xmlns="u"><status>x</status></a>`,
	`<a><b xmlns:p="u"/><p:status>x</p:status></a>`,
	`<xml:a><status>x</status></xml:a>`,
	`<xml><status xml:lang="en">success</status></xml>`,
	`<xml/><other><status>x</status></other>`,
	`<xml><status>success</status>`,
	`<xml><status a="1" a="2">success</status></xml>`,
	`<!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><xml><status>&b;</status></xml>`,
	"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><xml><status>error</status><error><message>caf\xe9</message></error></xml>",
	`<?xml version="1.0" encoding="UTF-16"?><xml/>`,
	`<?xml version="1.0" encoding="nonsense"?><xml/>`,
	"<xml><status>succ\xffess</status></xml>",
	`<!-- only a comment -->`,
	`<?pi only?>`,
	` `,
	`text<xml><status>x</status></xml>`,
	`<html><body>502 Bad Gateway</body></html>`,
	"\xef\xbb\xbf<xml><status>success</status></xml>",
	strings.Repeat("<a>", 1000),
	`<xml><status>a</status></xml></xml>`,
	`<xml><error><code>x</code></error><status>late</status></xml>`,
}

// parseXML reads every body as xmlquery's tree does, the fields and the
// error alike, on the seeds and on bodies made of their pieces.
func TestParseXMLAsXmlquery(t *testing.T) {
	same := func(body []byte) {
		t.Helper()
		var got Answer
		got.ParseError = got.parseXML(body)
		if want := xmlqueryAnswer(body); got != want {
			t.Fatalf("body %q:\n got %+v\nwant %+v", body, got, want)
		}
	}
	for _, s := range xmlAnswerSeeds {
		same([]byte(s))
	}
	pieces := []string{"<xml>", "</xml>", "<status>", "</status>", "<error>", "</error>", "<code>", "</code>",
		"<field>", "</field>", "<message>", "</message>", "<a>", "</a>", "<b/>", "success", " ", "\n", "x&amp;y",
		"<!-- c -->", "<?pi x?>", "<![CDATA[d]]>", `<p:status xmlns:p="u">`, "</p:status>", "<p:code>", "</p:code>",
		`<status xmlns="v">`, `<xml a="1" a="1">`, "&bad;", "<", ">", `<?xml version="1.0"?>`}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for j := rng.Intn(16); j >= 0; j-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		same([]byte(b.String()))
	}
}

// FuzzParseXMLAsXmlquery: whatever the body, parseXML reads what
// xmlquery's tree reads.
func FuzzParseXMLAsXmlquery(f *testing.F) {
	for _, s := range xmlAnswerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got Answer
		got.ParseError = got.parseXML(body)
		if want := xmlqueryAnswer(body); got != want {
			t.Fatalf("body %q:\n got %+v\nwant %+v", body, got, want)
		}
	})
}
