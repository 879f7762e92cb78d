// Package junit is the JUnit XML document CI systems read, in the
// Ant/Surefire dialect Jenkins, GitLab and GitHub take: gwconform run's
// junit.xml (conformance/report), explore-junit.xml (conformance/explore),
// diff-junit.xml (conformance/diff) and gwsim's client report in JUnit
// (simulator/clients) are each built from these types.
//
// A count or time left nil is not written: a reader takes an absent count
// as 0, and an absent time as not measured. gwconform run states every
// count and time; explore and diff state a suite's tests and failures;
// gwsim's client report the document's and each suite's tests and
// failures.
package junit

import (
	"encoding/xml"
	"io"
)

// Suites is the document's root element; its name, when set, names the
// whole document, and its counts and time, when set, are over all its
// suites.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr,omitempty"`
	Tests    *int     `xml:"tests,attr,omitempty"`
	Disabled *int     `xml:"disabled,attr,omitempty"`
	Errors   *int     `xml:"errors,attr,omitempty"`
	Failures *int     `xml:"failures,attr,omitempty"`
	// Time is in seconds.
	Time   *float64 `xml:"time,attr,omitempty"`
	Suites []Suite  `xml:"testsuite"`
}

// Suite is one testsuite: its counts, its properties and its cases. Of
// its cases, Failures have a failure, Errors an error; Skipped and
// Disabled have a skipped element, Disabled those that were never meant
// to run (pending).
type Suite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Disabled *int   `xml:"disabled,attr,omitempty"`
	Skipped  *int   `xml:"skipped,attr,omitempty"`
	Errors   *int   `xml:"errors,attr,omitempty"`
	Failures int    `xml:"failures,attr"`
	// Time is in seconds; Timestamp is when the suite started (gwconform
	// run: in UTC without a zone, 2006-01-02T15:04:05, as the dialect
	// writes it) or was reported (gwsim: RFC 3339).
	Time       *float64   `xml:"time,attr,omitempty"`
	Timestamp  string     `xml:"timestamp,attr,omitempty"`
	Properties Properties `xml:"properties,omitempty"`
	Cases      []Case     `xml:"testcase"`
}

// Properties are a suite's or a case's properties element; with none,
// there is no element.
type Properties []Property

// Property is a name and a value of a suite (a seed, a target) or of a
// case.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// properties is the properties element's content.
type properties struct {
	Properties []Property `xml:"property"`
}

// MarshalXML writes p as a properties element holding a property element
// each.
func (p Properties) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return e.EncodeElement(properties{p}, start)
}

// UnmarshalXML reads a properties element's property elements.
func (p *Properties) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var v properties
	if err := d.DecodeElement(&v, &start); err != nil {
		return err
	}
	*p = append(*p, v.Properties...)
	return nil
}

// Case is one test case. One with no Skipped, Error or Failure passed;
// Status, when set, is the writer's own word for how it ended.
type Case struct {
	Name      string `xml:"name,attr"`
	Classname string `xml:"classname,attr"`
	Status    string `xml:"status,attr,omitempty"`
	// Time is in seconds.
	Time *float64 `xml:"time,attr,omitempty"`
	// Skipped: the case did not run, or ran and does not count against
	// the suite; Error: it could not complete; Failure: it failed.
	Skipped    *Message   `xml:"skipped,omitempty"`
	Error      *Message   `xml:"error,omitempty"`
	Failure    *Message   `xml:"failure,omitempty"`
	Properties Properties `xml:"properties,omitempty"`
	SystemOut  *Text      `xml:"system-out,omitempty"`
	SystemErr  *Text      `xml:"system-err,omitempty"`
}

// Message is a skipped, error or failure element: what happened in one
// line, its type, and a text that says more.
type Message struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text
}

// Text is an element's text in one of XML's two spellings. Chars is
// written escaped; CDATA as a CDATA section, which writes quotes and
// newlines as they are, so that a text full of them (an exchange's
// bodies) stays its own size where escaped each would take five or six
// bytes. Set one of the two; reading a document puts either spelling in
// Chars.
type Text struct {
	Chars string `xml:",chardata"`
	CDATA string `xml:",cdata"`
}

// Write writes s as a whole document, as gwconform explore and gwconform
// diff write theirs: the XML header, s alone in a root element without
// name or counts, indented by two spaces, and a final newline.
func Write(w io.Writer, s Suite) error {
	return WriteSuites(w, Suites{Suites: []Suite{s}})
}

// WriteSuites writes s as a whole document, as gwsim's client report
// writes its suites: the XML header, s indented by two spaces, and a
// final newline.
func WriteSuites(w io.Writer, s Suites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
