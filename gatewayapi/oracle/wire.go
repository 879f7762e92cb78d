package oracle

// The wire: a request as it comes (method, Content-Type, body) and an
// answer as it goes back (status, Content-Type, Retry-After, body), judged
// by published 2.1, 2.5, 4 and CONTRACT 2 and 4 alone. gwsim proxy judges
// an app's requests and a service's answers with these, by the same table
// as the harness; they read bodies with the standard library, never with
// gwsim's codec.

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Statuses is the one HTTP status of each error code the CONTRACT names
// (CONTRACT 1-4). method_not_allowed is the code of CONTRACT 2's 405.
var Statuses = map[string]int{
	device.CodeInvalidField:         400,
	device.CodeMissingField:         400,
	device.CodeUnexpectedField:      400,
	device.CodeMalformedBody:        400,
	device.CodeBadRequest:           400,
	device.CodeUnsupportedMediaType: 415,
	device.CodeBodyTooLarge:         413,
	device.CodeMethodNotAllowed:     405,
	device.CodeNotFound:             404,
	device.CodeUnknownAPIKey:        401,
	device.CodeAccountMismatch:      403,
	device.CodeBadSignature:         401,
	device.CodeStaleTimestamp:       401,
	device.CodeReplayedRequest:      401,
	device.CodeGatewayNotFound:      404,
	device.CodeDeviceNotFound:       404,
	device.CodeTypeMismatch:         409,
	device.CodeRateLimited:          429,
	device.CodeUnauthorized:         401,
	device.CodeTimeout:              408,
	device.CodeGatewayOffline:       504,
	device.CodeInjectedFault:        503,
	device.CodeStorageFailed:        503,
	device.CodeStorageUnavailable:   503,
}

// inputCodes are the codes of a refusal for the request's own form: what
// a valid request must never get.
var inputCodes = map[string]bool{
	device.CodeInvalidField: true, device.CodeMissingField: true, device.CodeUnexpectedField: true,
	device.CodeMalformedBody: true, device.CodeUnsupportedMediaType: true, device.CodeBodyTooLarge: true,
	device.CodeMethodNotAllowed: true,
}

// laterCodes are refusals of a later stage (credentials, lookup, limits):
// the texts do not order them against the field rules, so an invalid
// request refused with one of them is still refused as it should be.
var laterCodes = map[string]bool{
	device.CodeUnknownAPIKey: true, device.CodeAccountMismatch: true, device.CodeBadSignature: true,
	device.CodeStaleTimestamp: true, device.CodeReplayedRequest: true, device.CodeGatewayNotFound: true,
	device.CodeDeviceNotFound: true, device.CodeTypeMismatch: true, device.CodeRateLimited: true,
	device.CodeTimeout: true, device.CodeBadRequest: true, device.CodeNotFound: true,
}

// FormatOfContentType is the body format a Content-Type declares
// (CONTRACT 2: application/json, application/xml or text/xml, with
// parameters); false for any other.
func FormatOfContentType(ct string) (device.Format, bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return 0, false
	}
	switch mt {
	case "application/json":
		return device.JSON, true
	case "application/xml", "text/xml":
		return device.XML, true
	}
	return 0, false
}

func malformed(must bool, why, quote string, also ...string) Verdict {
	v := refuse(must, device.CodeMalformedBody, "", why, quote)
	v.Also = also
	return v
}

// ReadBody reads a request body of the given format by published 2.1 and
// CONTRACT 2: JSON is one object with the single member control, itself
// an object; XML has the root xml with the one child control, holding one
// element of text per field. It returns the fields as sent, in order, or
// the refusal the body gets (OK false).
func ReadBody(format device.Format, body []byte) ([]Sent, Verdict) {
	if format == device.XML {
		return readXML(body)
	}
	return readJSON(body)
}

func readJSON(body []byte) ([]Sent, Verdict) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var top json.RawMessage
	if err := dec.Decode(&top); err != nil {
		return nil, malformed(true, "the body is not JSON: "+jsonErr(err), QuoteMalformed)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, malformed(true, "the body holds more than one JSON value", QuoteJSONBody)
	}
	if !utf8.Valid(body) {
		return nil, malformed(true, "the body is not UTF-8", QuoteMalformed)
	}
	members, err := objectMembers(top)
	if err != nil {
		return nil, malformed(true, "the JSON body is not an object with the member control", QuoteJSONBody)
	}
	var control json.RawMessage
	n, extra := 0, ""
	for _, m := range members {
		if m.Key != "control" {
			if extra == "" {
				extra = m.Key
			}
			continue
		}
		control = m.raw
		n++
	}
	switch {
	case extra != "" && n == 0:
		return nil, malformed(true, "the JSON object has the member "+title(extra)+" and no control", QuoteJSONControl, device.CodeUnexpectedField, device.CodeMissingField)
	case extra != "":
		return nil, malformed(true, "the JSON object has the member "+title(extra)+" beside control", QuoteJSONControl, device.CodeUnexpectedField)
	case n == 0:
		return nil, malformed(true, "the JSON object has no member control", QuoteJSONControl, device.CodeMissingField)
	case n > 1:
		return nil, malformed(true, "the JSON object has the member control twice", QuoteJSONControl)
	}
	fields, err := objectMembers(control)
	if err != nil {
		return nil, malformed(true, "control is not a JSON object", QuoteJSONControl)
	}
	if len(fields) == 0 {
		return nil, malformed(true, "control is an empty object", QuoteJSONBody, device.CodeMissingField)
	}
	out := make([]Sent, len(fields))
	for i, m := range fields {
		out[i] = Sent{Key: m.Key, Value: m.Value}
	}
	return out, Verdict{OK: true, Must: true, Why: "a JSON body of published 2.1"}
}

type member struct {
	Key   string
	Value Value
	raw   json.RawMessage
}

// objectMembers lists a JSON object's members in order, duplicates kept.
func objectMembers(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		m := member{Key: key, raw: v}
		switch {
		case len(v) > 0 && v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, err
			}
			m.Value = Str(s)
		case len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9'):
			m.Value = Num(string(v))
		default:
			m.Value = Lit(string(v))
		}
		out = append(out, m)
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errors.New("not an object")
	}
	return out, nil
}

func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	if err == io.EOF {
		return "the body is empty"
	}
	return err.Error()
}

func blank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// readXML reads an XML body token by token (xmlReading) and judges its
// shape: one root xml, one control in it, fields of text in control.
func readXML(body []byte) ([]Sent, Verdict) {
	r := &xmlReading{dec: xml.NewDecoder(bytes.NewReader(body))}
	r.dec.Strict = true
	for {
		tok, err := r.dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, malformed(true, "the body is not XML: "+err.Error(), QuoteMalformed)
		}
		if v, refused := r.take(tok); refused {
			return nil, v
		}
	}
	return r.verdict()
}

// xmlReading is an XML body read so far.
type xmlReading struct {
	dec *xml.Decoder
	// depth: 0 outside the root, 1 in xml, 2 in control, 3 in a field.
	depth, roots, controls int
	extra                  string // a child of the root beside control
	out                    []Sent
	text                   strings.Builder
	openWhy                string // a form neither text decides, found on the way
}

// take reads one token; refused says the body is refused, for v.
func (r *xmlReading) take(tok xml.Token) (v Verdict, refused bool) {
	switch t := tok.(type) {
	case xml.Directive:
		return malformed(true, "the XML body has a directive (a DOCTYPE): CONTRACT 2 allows none", QuoteNoDoctype), true
	case xml.ProcInst:
		if r.depth > 0 || r.roots > 0 {
			// XML allows a processing instruction anywhere; neither
			// text says what one in the body means.
			r.openWhy = "the XML body has a processing instruction after its start"
		}
	case xml.CharData:
		return r.chars(t)
	case xml.StartElement:
		return r.start(t)
	case xml.EndElement:
		r.depth--
		if r.depth == 2 {
			r.out[len(r.out)-1].Value = Str(r.text.String())
		}
	}
	return Verdict{}, false
}

// chars reads character data: a field's text, or white space elsewhere.
func (r *xmlReading) chars(t xml.CharData) (Verdict, bool) {
	switch {
	case r.depth == 3:
		r.text.Write(t)
	case blank(t):
	case r.depth == 0:
		return malformed(true, "the XML body has text outside its root element", QuoteMalformed), true
	default:
		// Character data beside control in the root, or beside the
		// fields in control: neither text decides it.
		r.openWhy = "the XML body has text beside " + map[int]string{1: "control in the root", 2: "the fields in control"}[r.depth]
	}
	return Verdict{}, false
}

// start reads an element's start: the root, control, a field, or an
// element where a field's text belongs.
func (r *xmlReading) start(t xml.StartElement) (Verdict, bool) {
	switch r.depth {
	case 0:
		r.roots++
		if r.roots > 1 {
			return malformed(true, "the XML body has a second root element", QuoteXMLBody), true
		}
		if t.Name.Local != "xml" || t.Name.Space != "" {
			return malformed(true, "the XML root is "+title(t.Name.Local)+", not xml", QuoteXMLBody, device.CodeMissingField), true
		}
	case 1:
		if t.Name.Local != "control" || t.Name.Space != "" {
			if r.extra == "" {
				r.extra = t.Name.Local
			}
			if err := r.dec.Skip(); err != nil {
				return malformed(true, "the body is not XML: "+err.Error(), QuoteMalformed), true
			}
			return Verdict{}, false
		}
		r.controls++
		if r.controls > 1 {
			return malformed(true, "the XML root has control twice", QuoteXMLControl), true
		}
	case 2:
		r.text.Reset()
		r.out = append(r.out, Sent{Key: t.Name.Local})
	case 3:
		name := r.out[len(r.out)-1].Key
		v := refuse(true, device.CodeInvalidField, name, name+" holds an element, not text", QuoteXMLBody)
		v.Also = []string{device.CodeMalformedBody}
		return v, true
	}
	r.depth++
	return Verdict{}, false
}

// verdict judges the body read to its end.
func (r *xmlReading) verdict() ([]Sent, Verdict) {
	switch {
	case r.roots == 0:
		return nil, malformed(true, "the body has no XML element", QuoteXMLBody)
	case r.depth != 0:
		return nil, malformed(true, "the XML body ends inside an element", QuoteMalformed)
	case r.extra != "" && r.controls == 0:
		return nil, malformed(true, "the XML root has the child "+title(r.extra)+" and no control", QuoteXMLControl, device.CodeUnexpectedField, device.CodeMissingField)
	case r.extra != "":
		return nil, malformed(true, "the XML root has the child "+title(r.extra)+" beside control", QuoteXMLControl, device.CodeUnexpectedField)
	case r.controls == 0:
		return nil, malformed(true, "the XML root has no control", QuoteXMLControl, device.CodeMissingField)
	case len(r.out) == 0:
		return nil, malformed(true, "control has no field", QuoteXMLBody, device.CodeMissingField)
	}
	if r.openWhy != "" {
		return r.out, open(r.openWhy)
	}
	return r.out, Verdict{OK: true, Must: true, Why: "an XML body of published 2.1"}
}

// Request is a request as it came.
type Request struct {
	Method      string
	ContentType string
	Body        []byte
}

// JudgeRequest judges a whole request of op by the method, the
// Content-Type, the body's size and structure (CONTRACT 2) and its fields
// (Judge). It returns the body's format (zero when the Content-Type names
// none: a refusal then comes in JSON, CONTRACT 4), the fields as sent, and
// the verdict. Like Judge, it leaves the credentials, the gateway, the
// device and the timestamp window to the caller.
func JudgeRequest(op device.Operation, r Request) (device.Format, []Sent, Verdict) {
	format, known := FormatOfContentType(r.ContentType)
	if r.Method != "POST" {
		v := refuse(true, device.CodeMethodNotAllowed, "", r.Method+" is not POST (published 4)", QuotePOST)
		v.Status = 405
		return format, nil, v
	}
	if len(r.Body) > MaxBody {
		v := refuse(false, device.CodeBodyTooLarge, "", fmt.Sprintf("the body has %d bytes; CONTRACT 2 allows %d", len(r.Body), MaxBody), QuoteBodyLimit)
		v.Status = 413
		return format, nil, v
	}
	if !known {
		v := refuse(true, device.CodeUnsupportedMediaType, "", "Content-Type "+title(r.ContentType)+" is neither application/json nor application/xml (published 4)", QuoteContentType)
		v.Status = 415
		return 0, nil, v
	}
	fields, v := ReadBody(format, r.Body)
	if v.Open {
		// A body form neither text decides: open, unless its fields are
		// refused whatever it means.
		if j := Judge(op, format, fields); !j.OK && !j.Open {
			return format, fields, j
		}
		return format, fields, v
	}
	if !v.OK {
		return format, nil, v
	}
	return format, fields, Judge(op, format, fields)
}

// Answer is an answer as it went back.
type Answer struct {
	Status      int
	ContentType string
	// RetryAfter is the Retry-After header ("" when absent).
	RetryAfter string
	Body       []byte
}

// Rules an answer is judged by, in report order.
const (
	// RuleAnswerFormat: the answer is JSON or XML, its Content-Type says
	// which, and it is in the request's format where that could be told,
	// else JSON (CONTRACT 4).
	RuleAnswerFormat = "answer_format"
	// RuleAnswerBody: success is 200 with status success (published 2.5,
	// 4.4); an error has status error and an error with a code and a
	// message (CONTRACT 4).
	RuleAnswerBody = "answer_body"
	// RuleRefusesInvalid: a request that breaks the rules is not answered
	// with success.
	RuleRefusesInvalid = "refuses_invalid"
	// RuleAcceptsValid: a request that follows the rules is not refused
	// for its form.
	RuleAcceptsValid = "accepts_valid"
	// RuleErrorCode: a request that breaks a rule is refused with the
	// rule's code (CONTRACT 2-4).
	RuleErrorCode = "error_code"
	// RuleNo5xx: never a 5xx for bad input (CONTRACT 4).
	RuleNo5xx = "no_5xx_for_bad_input"
	// RuleStatusOfCode: each error code comes with its one status.
	RuleStatusOfCode = "status_of_code"
	// RuleRetryAfter: 429 carries Retry-After (CONTRACT 4), in seconds or
	// as an HTTP date.
	RuleRetryAfter = "retry_after"
)

// AnswerRules names each rule, in report order.
var AnswerRules = []struct{ ID, Name string }{
	{RuleAnswerFormat, "answers JSON or XML, in the request's format (CONTRACT 4)"},
	{RuleAnswerBody, "answers status success with 200, status error with a code and a message otherwise (published 2.5, CONTRACT 4)"},
	{RuleRefusesInvalid, "refuses requests that break the interface's rules"},
	{RuleAcceptsValid, "does not refuse for its form a request that follows the rules"},
	{RuleErrorCode, "refuses a broken request with the rule's error code (CONTRACT 2-4)"},
	{RuleNo5xx, "never answers 5xx to bad input (CONTRACT 4)"},
	{RuleStatusOfCode, "gives each error code its one status (CONTRACT 1-4)"},
	{RuleRetryAfter, "sends Retry-After with 429 (CONTRACT 4)"},
}

// Breach is one rule an answer breaks.
type Breach struct {
	Rule string
	// Must: the published interface decides; otherwise the CONTRACT.
	Must bool
	Why  string
}

// AnswerBody is what an answer body says, read by CONTRACT 4's forms.
type AnswerBody struct {
	Status  string
	Code    string
	Field   string
	Message string
	// HasError: the body has an error element or member.
	HasError bool
}

// ReadAnswer reads an answer body of the given format; an error says how
// its structure breaks CONTRACT 4 (a JSON object, or the root xml).
func ReadAnswer(format device.Format, body []byte) (AnswerBody, error) {
	var a AnswerBody
	if format == device.XML {
		var x struct {
			XMLName xml.Name
			Status  string `xml:"status"`
			Error   *struct {
				Code    string `xml:"code"`
				Field   string `xml:"field"`
				Message string `xml:"message"`
			} `xml:"error"`
		}
		dec := xml.NewDecoder(bytes.NewReader(body))
		dec.Strict = true
		if err := dec.Decode(&x); err != nil {
			return a, fmt.Errorf("not XML: %v", err)
		}
		if at := RepeatedAttribute(body); at != "" {
			return a, fmt.Errorf("not XML: the attribute %s is given twice in one tag", at)
		}
		if x.XMLName.Local != "xml" {
			return a, fmt.Errorf("the root is %s, not xml", title(x.XMLName.Local))
		}
		a.Status = x.Status
		if x.Error != nil {
			a.HasError, a.Code, a.Field, a.Message = true, x.Error.Code, x.Error.Field, x.Error.Message
		}
		return a, nil
	}
	var j struct {
		Status *string `json:"status"`
		Error  *struct {
			Code    *string `json:"code"`
			Field   *string `json:"field"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&j); err != nil {
		return a, fmt.Errorf("not a JSON object of CONTRACT 4's form: %s", jsonErr(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return a, errors.New("more than one JSON value")
	}
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return a, errors.New("not a JSON object")
	}
	if j.Status != nil {
		a.Status = *j.Status
	}
	if e := j.Error; e != nil {
		a.HasError = true
		if e.Code != nil {
			a.Code = *e.Code
		}
		if e.Field != nil {
			a.Field = *e.Field
		}
		if e.Message != nil {
			a.Message = *e.Message
		}
	}
	return a, nil
}

// JudgeAnswer lists the rules an answer breaks, given the request's
// format (zero when it could not be told) and the verdict on the request
// (from JudgeRequest; the caller may turn a valid verdict into a refusal
// of the credentials, which it can check and this table cannot). An Open
// verdict judges only what holds for any answer.
func JudgeAnswer(format device.Format, req Verdict, a Answer) []Breach {
	var out []Breach
	add := func(rule string, must bool, why string, args ...any) {
		out = append(out, Breach{Rule: rule, Must: must, Why: fmt.Sprintf(why, args...)})
	}
	success := a.Status >= 200 && a.Status < 300
	af, known := FormatOfContentType(a.ContentType)
	want := format
	if want == 0 {
		want = device.JSON
	}
	// A success to a JSON request is an object with status (published
	// 4.4): MUST; the rest of the answer's form is CONTRACT 4's.
	mustForm := success && format == device.JSON
	var body AnswerBody
	readable := false
	switch {
	case !known:
		add(RuleAnswerFormat, mustForm, "answer %d has Content-Type %s, neither JSON nor XML", a.Status, title(a.ContentType))
	case a.Status == 405 && af != want:
		// CONTRACT 4 does not fix the format of a 405's body.
	case af != want:
		add(RuleAnswerFormat, mustForm, "answer %d is %s to a request whose body is %s", a.Status, af, want)
	}
	if known {
		b, err := ReadAnswer(af, a.Body)
		if err != nil {
			add(RuleAnswerBody, mustForm, "answer %d: the %s body is %v", a.Status, af, err)
		} else {
			body, readable = b, true
		}
	}
	if readable {
		switch {
		case a.Status == 200 && body.Status != "success":
			add(RuleAnswerBody, mustForm, "answer 200 has status %s, not success", title(body.Status))
		case success && a.Status != 200:
			add(RuleAnswerBody, false, "success is answered %d; CONTRACT 4 says 200", a.Status)
		case !success && body.Status != "error":
			add(RuleAnswerBody, false, "answer %d has status %s, not error", a.Status, title(body.Status))
		case !success && (!body.HasError || body.Code == ""):
			add(RuleAnswerBody, false, "answer %d has no error with a code", a.Status)
		case !success && body.Message == "":
			add(RuleAnswerBody, false, "answer %d (%s) has no error message", a.Status, body.Code)
		}
	}
	code := body.Code
	if code != "" && !success {
		if st, ok := Statuses[code]; ok && st != a.Status {
			add(RuleStatusOfCode, false, "error %s came with status %d; CONTRACT 4 gives it %d", code, a.Status, st)
		}
	}
	if a.Status == 429 && !retryAfterForm(a.RetryAfter) {
		if a.RetryAfter == "" {
			add(RuleRetryAfter, false, "answer 429 has no Retry-After")
		} else {
			add(RuleRetryAfter, false, "answer 429 has Retry-After %s, neither seconds nor an HTTP date", title(a.RetryAfter))
		}
	}
	if req.Open {
		return out
	}
	switch {
	case !req.OK && success:
		add(RuleRefusesInvalid, req.Must, "accepted (%d) a request that breaks a rule: %s", a.Status, req.Why)
	case !req.OK && a.Status >= 500:
		add(RuleNo5xx, false, "answered %d to bad input (%s: %s)", a.Status, req.Code, req.Why)
	case !req.OK && a.Status >= 400 && code != "" && code != req.Code && !contains(req.Also, code) && !laterCodes[code]:
		add(RuleErrorCode, false, "refused with %s a request the rule table refuses with %s (%s)", code, req.Code, req.Why)
	case req.OK && a.Status >= 400 && a.Status < 500 && inputCodes[code]:
		add(RuleAcceptsValid, req.Must, "refused with %d %s a request that follows the rules", a.Status, code)
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// retryAfterForm: delta-seconds or an HTTP date (RFC 9110 10.2.3).
func retryAfterForm(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	if n, err := strconv.ParseUint(v, 10, 63); err == nil && n < 1<<31 {
		return true
	}
	_, err := time.Parse(time.RFC1123, v)
	return err == nil
}

// BodyForm is a form of a whole body, written from a valid one.
type BodyForm struct {
	Format      device.Format
	Slug, Title string
	// Edit writes the form from a valid body of Format.
	Edit func(valid string) string
}

// OpenBodyForms are the body forms neither text decides (ReadBody calls
// them Open): character data beside control in the XML root or beside the
// fields in control, and a JSON member of control twice.
func OpenBodyForms() []BodyForm {
	return []BodyForm{
		{device.XML, "text-in-root", "with text beside control in the XML root",
			func(s string) string { return strings.Replace(s, "<xml>", "<xml>text", 1) }},
		{device.XML, "text-in-control", "with text beside the fields in control",
			func(s string) string { return strings.Replace(s, "<control>", "<control>text", 1) }},
		{device.JSON, "member-twice", "whose first member of control appears twice",
			func(s string) string {
				const open = `"control":{`
				i := strings.Index(s, open)
				if i < 0 {
					return s
				}
				i += len(open)
				j := strings.Index(s[i:], `,"`)
				if j < 0 {
					return s
				}
				return s[:i] + s[i:i+j] + "," + s[i:]
			}},
	}
}

// RepeatedAttribute is the first attribute that one tag of an XML body
// gives twice, or "": XML 1.0 forbids it (3.1, WFC Unique Att Spec), and
// Go's XML readers do not check it. Read it of a body they parsed.
func RepeatedAttribute(body []byte) string {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	for {
		tok, err := d.RawToken()
		if err != nil {
			return ""
		}
		start, ok := tok.(xml.StartElement)
		if !ok || len(start.Attr) < 2 {
			continue
		}
		seen := make(map[xml.Name]bool, len(start.Attr))
		for _, a := range start.Attr {
			if seen[a.Name] {
				if a.Name.Space != "" {
					return a.Name.Space + ":" + a.Name.Local
				}
				return a.Name.Local
			}
			seen[a.Name] = true
		}
	}
}
