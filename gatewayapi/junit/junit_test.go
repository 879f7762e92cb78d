package junit

import (
	"bytes"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"
)

// TestWriteStatesWhatIsSet: a nil count or time is not written, a zero
// one is; a case without properties has no properties element; Chars is
// escaped and CDATA is not.
func TestWriteStatesWhatIsSet(t *testing.T) {
	s := Suite{Name: "s", Tests: 2, Failures: 1, Skipped: new(0), Properties: Properties{{Name: "seed", Value: "7"}}, Cases: []Case{
		{Name: "a", Classname: "c", Failure: &Message{Message: "m", Type: "t", Text: Text{CDATA: `{"a":"<b>"}`}}, SystemOut: &Text{Chars: `"q"`}},
		{Name: "b", Classname: "c", Time: new(0.0)},
	}}
	var b bytes.Buffer
	if err := Write(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"<testsuites>\n",
		`<testsuite name="s" tests="2" skipped="0" failures="1">`,
		`<failure message="m" type="t"><![CDATA[{"a":"<b>"}]]></failure>`,
		`<system-out>&#34;q&#34;</system-out>`,
		`<testcase name="b" classname="c" time="0"></testcase>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the document lacks %s:\n%s", want, out)
		}
	}
	if strings.Count(out, "<properties>") != 1 {
		t.Errorf("want the suite's properties element only:\n%s", out)
	}
}

// TestReadBack: a document reads back into the model, either spelling of
// a text into Chars.
func TestReadBack(t *testing.T) {
	s := Suite{Name: "s", Tests: 1, Errors: new(3), Time: new(1.5), Properties: Properties{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}, Cases: []Case{
		{Name: "a", Classname: "c", Status: "panicked", Error: &Message{Message: "m", Text: Text{CDATA: "body ]]> end"}},
			Properties: Properties{{Name: "check.outcome", Value: "failed"}}, SystemErr: &Text{CDATA: "err"}},
	}}
	var b bytes.Buffer
	if err := Write(&b, s); err != nil {
		t.Fatal(err)
	}
	var got Suites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Suites) != 1 || len(got.Suites[0].Cases) != 1 {
		t.Fatalf("read %+v", got)
	}
	g, c := got.Suites[0], got.Suites[0].Cases[0]
	if *g.Errors != 3 || *g.Time != 1.5 || g.Skipped != nil || !reflect.DeepEqual(g.Properties, s.Properties) {
		t.Errorf("suite read as %+v", g)
	}
	if c.Error.Chars != "body ]]> end" || c.SystemErr.Chars != "err" || !reflect.DeepEqual(c.Properties, s.Cases[0].Properties) || c.Time != nil {
		t.Errorf("case read as %+v", c)
	}
}

// TestWriteSuitesNamesTheDocument: WriteSuites writes every suite in one
// root element, its name first and its counts as set; Write's root has
// neither.
func TestWriteSuitesNamesTheDocument(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSuites(&b, Suites{Name: "n", Tests: new(2), Failures: new(0), Suites: []Suite{{Name: "a", Tests: 1}, {Name: "b", Tests: 1}}}); err != nil {
		t.Fatal(err)
	}
	want := xml.Header + `<testsuites name="n" tests="2" failures="0">
  <testsuite name="a" tests="1" failures="0"></testsuite>
  <testsuite name="b" tests="1" failures="0"></testsuite>
</testsuites>
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
