// Package junit is the JUnit XML document that CI systems read, as
// gwconform explore and gwconform diff write it: one suite of test cases,
// each passed or failed with a message and a text. (gwconform run's
// junit.xml, written from the report model by conformance/report, has
// more to say per check and keeps its own shape.)
package junit

import (
	"encoding/xml"
	"io"
)

// Suites is the document's root element.
type Suites struct {
	XMLName xml.Name `xml:"testsuites"`
	Suites  []Suite  `xml:"testsuite"`
}

// Suite is one testsuite: its counts, its properties and its cases.
type Suite struct {
	Name       string     `xml:"name,attr"`
	Tests      int        `xml:"tests,attr"`
	Failures   int        `xml:"failures,attr"`
	Time       string     `xml:"time,attr,omitempty"`
	Properties []Property `xml:"properties>property"`
	Cases      []Case     `xml:"testcase"`
}

// Property is a name and a value of the suite (a seed, a target).
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is one test case; Failure is nil for a passed one.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Failure   *Failure `xml:"failure,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Failure says why a case failed.
type Failure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Write writes s as a whole document: the XML header, s indented, and a
// final newline.
func Write(w io.Writer, s Suite) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(Suites{Suites: []Suite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
