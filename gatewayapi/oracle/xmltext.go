package oracle

import (
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// XML 1.0's grammar, and CONTRACT 2's narrowing of it ("No DOCTYPE, no
// entities beyond the five predefined ones."), broken one production at a
// time in a valid body of send message (the declaration, then <xml>, then
// <control> holding one element per field, message_type "message" among
// them). A text that is not well-formed XML is no XML: published 1 says
// "The request body is JSON or XML." (MUST, not accepted; CONTRACT 2: 400
// malformed_body). A well-formed document with a DOCTYPE, in any form, is
// refused by CONTRACT 2 alone (SHOULD). Attributes and namespaces, which
// neither text mentions, and the declaration's other versions and
// encodings are Open.

// notXML is the verdict on a text XML 1.0 does not allow.
func notXML(rule string) (Verdict, string) {
	v := malformed(true, "not well-formed XML: "+rule, QuoteJSONOrXML)
	section, _, _ := strings.Cut(rule, ":")
	return v, "XML 1.0 " + section + ": not well-formed, so not the body published 1 allows"
}

// XMLDeclaration is the declaration gwconform writes before the root.
const XMLDeclaration = `<?xml version="1.0" encoding="UTF-8"?>`

// XMLDocumentNearMisses are the generated forms of an XML body: the
// prolog (XML declaration, comments, processing instructions, byte order
// mark), DOCTYPE in every form (bare, SYSTEM, PUBLIC, an internal subset
// with element, attribute-list and entity declarations, an entity used),
// entities and character references, well-formedness of markup, and
// attributes and namespaces.
func XMLDocumentNearMisses() []NearMiss {
	var out []NearMiss
	const mt = "<message_type>message</message_type>"
	rep := func(old, new string) func(string) string {
		return func(s string) string { return strings.Replace(s, old, new, 1) }
	}
	// prolog replaces the declaration (or adds p where there is none).
	prolog := func(p string) func(string) string {
		return func(s string) string {
			return p + strings.TrimPrefix(s, XMLDeclaration)
		}
	}
	afterDecl := func(p string) func(string) string {
		return func(s string) string {
			return XMLDeclaration + p + strings.TrimPrefix(s, XMLDeclaration)
		}
	}
	bad := func(slug, title, rule string, edit func(string) string) {
		v, inf := notXML(rule)
		out = append(out, NearMiss{Slug: slug, Title: title, Edit: edit, Verdict: v, Inference: inf})
	}
	doctype := func(slug, title string, edit func(string) string) {
		out = append(out, NearMiss{Slug: slug, Title: title, Edit: edit,
			Verdict: malformed(false, "a DOCTYPE: CONTRACT 2 allows none", QuoteNoDoctype)})
	}
	good := func(slug, title string, edit func(string) string) {
		out = append(out, NearMiss{Slug: slug, Title: title, Edit: edit,
			Verdict: ok(false, nil, "a well-formed XML document of the published shape, written another way")})
	}
	undecided := func(slug, title, why string, edit func(string) string) {
		out = append(out, NearMiss{Slug: slug, Title: title, Edit: edit, Verdict: open(why)})
	}
	const (
		declAtStart = "2.8 [23]: the XML declaration, if any, comes first, before any white space"
		declForm    = "2.8 [23]-[26]: XMLDecl = '<?xml' VersionInfo EncodingDecl? SDDecl? S? '?>', the version first, quoted, in lower-case 'xml'"
		piTarget    = "2.6 [17]: a processing instruction's target is no name matching [Xx][Mm][Ll]"
		docOrder    = "2.8 [22], [28]: prolog = XMLDecl? Misc* (doctypedecl Misc*)?; the DOCTYPE comes before the root element"
		keyword     = "2.8 [28]: the DOCTYPE keyword is '<!DOCTYPE', in upper case"
		declared    = "4.1 WFC Entity Declared: a document without a DTD may use only amp, lt, gt, apos and quot"
		charRef     = "4.1 WFC Legal Character: a character reference names a Char, in decimal or hexadecimal digits"
		chars       = "2.2 [2]: Char excludes U+0000 and the control characters other than tab, line feed and carriage return"
		markup      = "2.4 [14]: & and < appear in character data only as the start of a reference or markup"
		elements    = "3 WFC Element Type Match: every element is closed by an end-tag of its own name"
		attrs       = "3.1 [41], WFC Unique Att Spec: an attribute's value is quoted, and no attribute appears twice in a tag"
		comments    = "2.5 [15]: a comment does not hold --"
		cdata       = "2.7 [18]: a CDATA section ends with ]]>"
	)
	// The prolog.
	good("declaration-without-encoding", "whose XML declaration names no encoding", prolog(`<?xml version="1.0"?>`))
	good("declaration-standalone", `whose XML declaration says standalone="yes"`, prolog(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`))
	good("declaration-encoding-lower-case", "whose XML declaration names the encoding utf-8 in lower case", prolog(`<?xml version="1.0" encoding="utf-8"?>`))
	good("comment-before-root", "with a comment between the declaration and the root", afterDecl("<!-- a comment -->"))
	good("white-space-before-root", "with a line feed between the declaration and the root", afterDecl("\n"))
	good("white-space-after-root", "with a line feed after the root", func(s string) string { return s + "\n" })
	good("comment-after-root", "with a comment after the root", func(s string) string { return s + "<!-- a comment -->" })
	good("character-reference-decimal", "whose message_type starts with a decimal character reference", rep(mt, "<message_type>&#109;essage</message_type>"))
	bad("white-space-before-declaration", "with a space before the XML declaration", declAtStart, func(s string) string { return " " + s })
	bad("declaration-twice", "with the XML declaration twice", declAtStart, func(s string) string { return XMLDeclaration + s })
	bad("declaration-after-comment", "with a comment before the XML declaration", declAtStart, func(s string) string { return "<!-- c -->" + s })
	bad("declaration-without-version", "whose XML declaration has no version", declForm, prolog(`<?xml encoding="UTF-8"?>`))
	bad("declaration-empty", "whose XML declaration is <?xml?>", declForm, prolog(`<?xml?>`))
	bad("declaration-version-unquoted", "whose XML declaration's version is not quoted", declForm, prolog(`<?xml version=1.0?>`))
	bad("declaration-encoding-first", "whose XML declaration names the encoding before the version", declForm, prolog(`<?xml encoding="UTF-8" version="1.0"?>`))
	bad("declaration-upper-case", "whose XML declaration is written <?XML", piTarget, prolog(`<?XML version="1.0"?>`))
	bad("declaration-unclosed", "whose XML declaration is not closed", declForm, prolog(`<?xml version="1.0" encoding="UTF-8"`))
	undecided("version-1.1", `whose XML declaration says version="1.1"`,
		"an XML 1.1 document is XML; neither text names a version of XML", prolog(`<?xml version="1.1" encoding="UTF-8"?>`))
	undecided("encoding-latin-1", "whose XML declaration names ISO-8859-1 (the body is ASCII)",
		"neither text names an encoding; XML 1.0 4.3.3 leaves the encodings other than UTF-8 and UTF-16 to the processor",
		prolog(`<?xml version="1.0" encoding="ISO-8859-1"?>`))
	undecided("byte-order-mark", "that begins with a byte order mark",
		"XML 1.0 4.3.3 and Appendix F let a UTF-8 entity begin with a byte order mark, which neither text mentions",
		func(s string) string { return "\ufeff" + s })
	undecided("processing-instruction-before-root", "with a processing instruction before the root",
		"neither text says whether a processing instruction may accompany the body", afterDecl(`<?gw hint?>`))
	// DOCTYPE in every form: CONTRACT 2 refuses them all.
	doctype("doctype-bare", "with a bare <!DOCTYPE xml>", afterDecl(`<!DOCTYPE xml>`))
	doctype("doctype-without-declaration", "that begins with <!DOCTYPE xml> and no XML declaration", prolog(`<!DOCTYPE xml>`))
	doctype("doctype-system", "with a DOCTYPE naming a SYSTEM identifier", afterDecl(`<!DOCTYPE xml SYSTEM "gw.dtd">`))
	doctype("doctype-public", "with a DOCTYPE naming a PUBLIC identifier", afterDecl(`<!DOCTYPE xml PUBLIC "-//GW//DTD Gateway//EN" "gw.dtd">`))
	doctype("doctype-empty-subset", "with a DOCTYPE and an empty internal subset", afterDecl(`<!DOCTYPE xml []>`))
	doctype("doctype-element-declaration", "with a DOCTYPE declaring the element xml", afterDecl(`<!DOCTYPE xml [<!ELEMENT xml ANY>]>`))
	doctype("doctype-attribute-list", "with a DOCTYPE declaring a default attribute of control", afterDecl(`<!DOCTYPE xml [<!ATTLIST control mode CDATA "x">]>`))
	doctype("doctype-entity-declared", "with a DOCTYPE declaring an entity", afterDecl(`<!DOCTYPE xml [<!ENTITY gw "gateway">]>`))
	doctype("doctype-entity-used", "with a DOCTYPE declaring an entity that message_type uses",
		func(s string) string {
			return strings.Replace(afterDecl(`<!DOCTYPE xml [<!ENTITY m "message">]>`)(s), mt, "<message_type>&m;</message_type>", 1)
		})
	doctype("doctype-external-entity", "with a DOCTYPE declaring an external entity", afterDecl(`<!DOCTYPE xml [<!ENTITY ext SYSTEM "file:///etc/hostname">]>`))
	doctype("doctype-parameter-entity", "with a DOCTYPE declaring a parameter entity", afterDecl(`<!DOCTYPE xml [<!ENTITY % p "x">]>`))
	doctype("doctype-other-root", "with a DOCTYPE naming another root element", afterDecl(`<!DOCTYPE control>`))
	bad("doctype-lower-case", "with <!doctype xml> in lower case", keyword, afterDecl(`<!doctype xml>`))
	bad("doctype-after-root", "with a DOCTYPE after the root element", docOrder, func(s string) string { return s + "<!DOCTYPE xml>" })
	// Entities and references.
	bad("entity-copy", "whose message_type holds &copy;, an entity XML does not predefine", declared, rep(mt, "<message_type>mess&copy;age</message_type>"))
	bad("entity-amp-upper-case", "whose message_type holds &AMP; (entity names are case-sensitive)", declared, rep(mt, "<message_type>mess&AMP;age</message_type>"))
	bad("ampersand-alone", "whose message_type holds a bare &", markup, rep(mt, "<message_type>mess&age</message_type>"))
	bad("less-than-in-text", "whose message_type holds a bare <", markup, rep(mt, "<message_type>mess<age</message_type>"))
	bad("character-reference-not-hex", "whose message_type holds &#xZZ;", charRef, rep(mt, "<message_type>&#xZZ;message</message_type>"))
	bad("character-reference-nul", "whose message_type holds &#0;, no XML character", charRef, rep(mt, "<message_type>&#0;message</message_type>"))
	bad("raw-control-character", "whose message_type holds a raw U+0001", chars, rep(mt, "<message_type>mess\x01age</message_type>"))
	// Markup.
	bad("control-unclosed", "whose control is never closed", elements, rep("</control>", ""))
	bad("field-unclosed", "whose message_type is never closed", elements, rep(mt, "<message_type>message"))
	// A reader that stops at the first fault sees message_type holding an
	// element: invalid_field names that fault.
	out[len(out)-1].Verdict.Also = []string{device.CodeInvalidField}
	bad("attribute-unquoted", "with an unquoted attribute on control", attrs, rep("<control>", "<control id=1>"))
	bad("attribute-twice", "with the same attribute twice on control", attrs, rep("<control>", `<control id="1" id="2">`))
	bad("comment-with-double-hyphen", "with a comment holding --", comments, rep("<control>", "<control><!-- a -- b -->"))
	bad("cdata-unterminated", "whose message_type's CDATA section is not closed", cdata, rep(mt, "<message_type><![CDATA[message</message_type>"))
	// Attributes and namespaces: neither text mentions them.
	const attrWhy = "neither text says whether an element of the body may carry attributes"
	const nsWhy = "neither text mentions XML namespaces; whether a namespace declaration or a prefix changes an element's name is the reader's choice"
	undecided("attribute-on-root", "with an attribute on the root xml", attrWhy, rep("<xml>", `<xml version="1">`))
	undecided("attribute-on-control", "with an attribute on control beside its child elements", attrWhy, rep("<control>", `<control id="1">`))
	undecided("attribute-on-field", "with an attribute on message_type", attrWhy, rep(mt, `<message_type lang="en">message</message_type>`))
	undecided("default-namespace", "whose root declares a default namespace", nsWhy, rep("<xml>", `<xml xmlns="urn:gw">`))
	undecided("prefixed-root", "whose root is written with a declared prefix", nsWhy, func(s string) string {
		return strings.NewReplacer("<xml>", `<gw:xml xmlns:gw="urn:gw">`, "</xml>", "</gw:xml>").Replace(s)
	})
	undecided("undeclared-prefix", "whose control is written with a prefix never declared", nsWhy, func(s string) string {
		return strings.NewReplacer("<control>", "<gw:control>", "</control>", "</gw:control>").Replace(s)
	})
	return out
}
