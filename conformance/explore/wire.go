package explore

import (
	"context"
	"encoding/json"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Wire forms: a request in a form other than the generator's plain one,
// named by Op.Wire. The operation itself (account, key, gateway, device,
// fields) stays what it is; only what goes on the wire changes: an
// envelope value written in another allowed form or broken in one way
// (the oracle's Forms and Broken samples of that field, made from the
// value actually sent), the timestamp moved in or out of the window, a
// well-formed sign that authenticates nothing, another method, path or
// media type, the sn sent as device_id, a format field, a field name in
// another letter case, a member or child beside control, or a field
// written as an attribute. Generator.WireForms draws them (diff sets it);
// the model judges each by the oracle's JudgeRequest on the request as
// built, and where that finds the form valid, by what the form means
// (the window, the sign, the path) or else as the plain request.

// wireForm is one form.
type wireForm struct {
	slug string
	// rule is the rule a disagreement about the form falls under.
	rule string
	// kinds are the operations it applies to (nil: every POST operation);
	// format the request format it needs ("": either).
	kinds  []Kind
	format string
	// field and sample: an envelope value replaced by the oracle's sample
	// of that slug (made from the value sent), class "form" or "broken".
	field  *oracle.Field
	class  string
	sample string
	// edit changes the fields otherwise (nil: no change).
	edit func(op Op, fs []client.Field) []client.Field
	// body edits the encoded body.
	body func(s string) string
	// method, path and contentType replace the plain request's.
	method, contentType string
	path                bool // /v2/ for /v1/
	// shift moves the timestamp by this many windows plus extra.
	shift       float64
	shiftExtra  time.Duration
	wrongSign   bool // a well-formed sign that authenticates nothing
	needsWindow bool
	// twoFaults: a field under another name is both missing and
	// unexpected; the texts do not say which a target names first.
	twoFaults bool
}

var (
	wireTable = map[string]*wireForm{}
	// wireSlugs are the forms in a fixed order, for drawing.
	wireSlugs []string
)

func addWire(f *wireForm) {
	wireTable[f.slug] = f
	wireSlugs = append(wireSlugs, f.slug)
}

func init() {
	// Envelope values in each allowed form and broken in each way the
	// oracle knows, from the value sent.
	for _, x := range []struct {
		f     *oracle.Field
		rule  string
		kinds []Kind
	}{
		{&oracle.MAC, "API-2.1.mac-form", nil},
		{&oracle.Account, "API-2.1.myservice_id-form", nil},
		{&oracle.SN, "API-2.2.sn-form", []Kind{Command, Rename}},
		{&oracle.TimestampF, "API-2.1.timestamp-form", nil},
		{&oracle.Sign, "API-2.1.sign-form", nil},
	} {
		for _, class := range []string{"form", "broken"} {
			ss := x.f.Forms(x.f.Example)
			if class == "broken" {
				ss = x.f.Broken(x.f.Example)
			}
			for _, s := range ss {
				if s.Value.Kind == oracle.Other && s.Value.Raw == "" {
					continue
				}
				rule := x.rule
				if class == "form" {
					rule = "C-2.hex-case"
				}
				f := &wireForm{slug: x.f.Name + " " + class + " " + s.Slug, rule: rule, kinds: x.kinds, field: x.f, class: class, sample: s.Slug}
				if s.Value.JSONOnly() {
					f.format = "json"
				}
				addWire(f)
			}
		}
	}
	addWire(&wireForm{slug: "sign that authenticates nothing", rule: "API-5.authentication", wrongSign: true})
	addWire(&wireForm{slug: "timestamp a fifth of the window ahead", rule: "C-1.window", shift: 0.2, needsWindow: true})
	addWire(&wireForm{slug: "timestamp a fifth of the window behind", rule: "C-1.window", shift: -0.2, needsWindow: true})
	addWire(&wireForm{slug: "timestamp 5 s past the window ahead", rule: "C-1.window", shift: 1, shiftExtra: 5 * time.Second, needsWindow: true})
	addWire(&wireForm{slug: "timestamp 5 s past the window behind", rule: "C-1.window", shift: -1, shiftExtra: -5 * time.Second, needsWindow: true})
	addWire(&wireForm{slug: "timestamp two hours past the window ahead", rule: "C-1.window", shift: 1, shiftExtra: 2 * time.Hour, needsWindow: true})
	addWire(&wireForm{slug: "method GET", rule: "API-1.post", method: "GET"})
	addWire(&wireForm{slug: "path /v2/", rule: "API-4.paths", path: true})
	addWire(&wireForm{slug: "Content-Type text/plain", rule: "API-4.content-type", contentType: "text/plain"})
	addWire(&wireForm{slug: "Content-Type with charset=utf-8", rule: "C-2.media-type", contentType: "charset"})
	addWire(&wireForm{slug: "sn sent as device_id", rule: "C-2.device_id", kinds: []Kind{Command},
		edit: func(op Op, fs []client.Field) []client.Field {
			return renameField(fs, device.FieldSN, device.FieldDeviceID)
		}})
	addWire(&wireForm{slug: "format field of the request's format", rule: "C-2.format-field",
		edit: func(op Op, fs []client.Field) []client.Field {
			return append(fs, client.Field{Key: device.FieldFormat, Value: op.Format})
		}})
	addWire(&wireForm{slug: "format field of the other format", rule: "C-2.format-field",
		edit: func(op Op, fs []client.Field) []client.Field {
			other := "xml"
			if op.Format == "xml" {
				other = "json"
			}
			return append(fs, client.Field{Key: device.FieldFormat, Value: other})
		}})
	addWire(&wireForm{slug: "type field named Type", rule: "C-2.unexpected", twoFaults: true, kinds: []Kind{Command},
		edit: func(op Op, fs []client.Field) []client.Field { return renameField(fs, device.FieldType, "Type") }})
	addWire(&wireForm{slug: "name field named Name", rule: "C-2.unexpected", twoFaults: true, kinds: []Kind{Rename},
		edit: func(op Op, fs []client.Field) []client.Field { return renameField(fs, device.FieldName, "Name") }})
	addWire(&wireForm{slug: "mac field named Mac", rule: "C-2.unexpected", twoFaults: true, kinds: []Kind{Message},
		edit: func(op Op, fs []client.Field) []client.Field { return renameField(fs, device.FieldMAC, "Mac") }})
	addWire(&wireForm{slug: "no name field", rule: "API-2.2.name", kinds: []Kind{Rename},
		edit: func(op Op, fs []client.Field) []client.Field { return dropField(fs, device.FieldName) }})
	addWire(&wireForm{slug: "type Toaster", rule: "API-2.3.type-values", kinds: []Kind{Command},
		edit: func(op Op, fs []client.Field) []client.Field { return setField(fs, device.FieldType, "Toaster") }})
	addWire(&wireForm{slug: "member extra beside control", rule: "API-2.1.json-control", format: "json",
		body: func(s string) string {
			if i := strings.LastIndex(s, "}"); i > 0 {
				return s[:i] + `,"extra":{}}` + s[i+1:]
			}
			return s
		}})
	addWire(&wireForm{slug: "element extra beside control", rule: "API-2.1.xml-control", format: "xml",
		body: func(s string) string { return strings.Replace(s, "</control>", "</control><extra></extra>", 1) }})
	addWire(&wireForm{slug: "mac as an attribute of control", rule: "API-2.1.xml-control", format: "xml",
		body: attributeForm})
}

func renameField(fs []client.Field, from, to string) []client.Field {
	return editField(fs, from, func(f *client.Field) { f.Key = to })
}

func dropField(fs []client.Field, key string) []client.Field {
	var out []client.Field
	for _, f := range fs {
		if f.Key != key {
			out = append(out, f)
		}
	}
	return out
}

func setField(fs []client.Field, key string, v any) []client.Field {
	return editField(fs, key, func(f *client.Field) { f.Value = v })
}

// editField is a copy of fs with edit applied to the fields named key.
func editField(fs []client.Field, key string, edit func(*client.Field)) []client.Field {
	out := make([]client.Field, len(fs))
	for i, f := range fs {
		if f.Key == key {
			edit(&f)
		}
		out[i] = f
	}
	return out
}

// attributeForm moves control's mac element into an attribute of control
// (not a credential, which reports mask in elements only).
func attributeForm(s string) string {
	i, j := strings.Index(s, "<mac>"), strings.Index(s, "</mac>")
	if i < 0 || j < i || !strings.Contains(s, "<control>") {
		return s
	}
	value := strings.ReplaceAll(s[i+len("<mac>"):j], `"`, "&quot;")
	s = s[:i] + s[j+len("</mac>"):]
	return strings.Replace(s, "<control>", `<control mac="`+value+`">`, 1)
}

// wireOf is op's form, nil for the plain request.
func wireOf(op Op) *wireForm {
	if op.Wire == "" {
		return nil
	}
	return wireTable[op.Wire]
}

// applies says whether form f can be sent as op in world w.
func (f *wireForm) applies(op Op, w *World) bool {
	if f.format != "" && f.format != op.Format {
		return false
	}
	if f.needsWindow && w.Window <= 0 || f.wrongSign && w.Scheme != auth.MD5 {
		return false
	}
	if f.field == &oracle.Sign && w.Scheme == auth.Off {
		return false
	}
	if f.kinds == nil {
		return true
	}
	for _, k := range f.kinds {
		if k == op.Kind {
			return true
		}
	}
	return false
}

// drawWire puts a form that applies to op on it, if one does.
func drawWire(r *rand.Rand, op Op, w *World) (Op, bool) {
	for range 8 {
		f := wireTable[wireSlugs[r.Intn(len(wireSlugs))]]
		if f.applies(op, w) {
			op.Wire = f.slug
			if op.Note == "" || op.Note == "valid" {
				op.Note = f.slug
			} else {
				op.Note += ", " + f.slug
			}
			return op, true
		}
	}
	return op, false
}

// samples keeps the sample values made (the oracle makes every sample of
// a field to give one): the mac, account and sn of a fleet are few, and a
// timestamp or sign is the same for a second's requests.
var samples = struct {
	sync.Mutex
	m map[string]sampled
}{m: map[string]sampled{}}

type sampled struct {
	v  any
	ok bool
}

// sampleValue is the oracle's sample slug of field f made from base, as a
// field value; ok is false when there is none.
func (wf *wireForm) sampleValue(base string) (any, bool) {
	key := wf.slug + "\x00" + base
	samples.Lock()
	s, hit := samples.m[key]
	samples.Unlock()
	if hit {
		return s.v, s.ok
	}
	v, ok := wf.makeSample(base)
	samples.Lock()
	if len(samples.m) >= 4096 {
		samples.m = map[string]sampled{}
	}
	samples.m[key] = sampled{v, ok}
	samples.Unlock()
	return v, ok
}

func (wf *wireForm) makeSample(base string) (any, bool) {
	ss := wf.field.Forms(base)
	if wf.class == "broken" {
		ss = wf.field.Broken(base)
	}
	for _, s := range ss {
		if s.Slug != wf.sample {
			continue
		}
		switch s.Value.Kind {
		case oracle.Number:
			return json.Number(s.Value.Raw), true
		case oracle.Other:
			return json.RawMessage(s.Value.Raw), true
		}
		return s.Value.Raw, true
	}
	return nil, false
}

// fields is op's fields fs (those of its plain request) in form f.
func (f *wireForm) fields(op Op, fs []client.Field) []client.Field {
	if f.field != nil {
		for _, x := range fs {
			if x.Key != f.field.Name {
				continue
			}
			base, _ := x.Value.(string)
			if f.spoilsSign() {
				// Broken from a sign nobody signs with, not from the real
				// one: nothing of the secret goes out.
				base = oracle.Sign.Example
			}
			if v, ok := f.sampleValue(base); ok {
				fs = setField(fs, f.field.Name, v)
			}
			break
		}
	}
	if f.wrongSign {
		fs = setField(fs, device.FieldSign, oracle.Sign.Example)
	}
	if f.edit != nil {
		fs = f.edit(op, fs)
	}
	return fs
}

// spoilsSign says whether the form sends a sign that authenticates
// nothing (broken, made from a sign nobody signs with, or well-formed
// and wrong); false for nil. Its curl line signs afresh and then puts a
// well-formed wrong sign in, as for Op.BadSign.
func (f *wireForm) spoilsSign() bool {
	return f != nil && (f.wrongSign || f.field == &oracle.Sign && f.class == "broken")
}

// signsFirst says whether the form needs the correct sign before it
// changes the fields: it writes the sign in another form, or edits the
// encoded body.
func (f *wireForm) signsFirst() bool {
	return f.field == &oracle.Sign && f.class == "form" || f.body != nil
}

func (f *wireForm) mediaType(format device.Format) string {
	ct := "application/json"
	if format == device.XML {
		ct = "application/xml"
	}
	switch f.contentType {
	case "":
		return ct
	case "charset":
		return ct + "; charset=utf-8"
	}
	return f.contentType
}

// shifted is now moved as the form says, for a fleet of window w.
func (f *wireForm) shifted(now time.Time, w time.Duration) time.Time {
	if f.shift == 0 && f.shiftExtra == 0 {
		return now
	}
	return now.Add(time.Duration(f.shift*float64(w)) + f.shiftExtra)
}

// wire changes req, op's plain request, into op's form.
func (t *Target) wire(ctx context.Context, op Op, f *wireForm, req client.Request) client.Request {
	fs := append([]client.Field(nil), req.Fields...)
	if ts := f.shifted(time.Now(), t.fleet.Window()); f.shift != 0 || f.shiftExtra != 0 {
		fs = setField(fs, device.FieldTimestamp, auth.Timestamp(ts, t.fleet.Location()))
	}
	if f.signsFirst() && req.Sign == client.SignAuto {
		var rest []client.Field
		for _, x := range fs {
			if x.Key != device.FieldSign {
				rest = append(rest, x)
			}
		}
		if s, err := t.signer.Sign(ctx, rest); err == nil {
			fs = setField(fs, device.FieldSign, s)
		}
		req.Sign = client.SignKeep
	}
	if f.spoilsSign() {
		req.Sign = client.SignKeep
	}
	fs = f.fields(op, fs)
	req.Fields = fs
	if f.body != nil {
		if b, err := client.Encode(req.Format, fs); err == nil {
			req.RawBody = []byte(f.body(string(b)))
		}
	}
	if f.method != "" {
		req.Method = f.method
	}
	if f.path {
		req.Path = strings.Replace(req.Path, "/v1/", "/v2/", 1)
	}
	if f.contentType != "" {
		req.ContentType = f.mediaType(req.Format)
	}
	return req
}

// judgeWire is the verdict on op in form f, whose plain verdict is plain.
func (m *Model) judgeWire(op Op, f *wireForm, plain Verdict) Verdict {
	if f.path {
		return Verdict{Expect: refuse(404, "", device.CodeNotFound)}
	}
	format := formatOf(op.Format)
	fs := f.fields(op, requestFields(op, m.Rules, oracle.TimestampF.Example, oracle.Sign.Example))
	body, err := client.Encode(format, fs)
	if err != nil {
		return Verdict{Expect: Expect{Any: true}, Open: true}
	}
	if f.body != nil {
		body = []byte(f.body(string(body)))
	}
	method := "POST"
	if f.method != "" {
		method = f.method
	}
	_, _, v := oracle.JudgeRequest(deviceOperation(op.Kind), oracle.Request{Method: method, ContentType: f.mediaType(format), Body: body})
	switch {
	case v.Open:
		return Verdict{Expect: Expect{Any: true}, Open: true}
	case !v.OK && f.twoFaults && (v.Code == device.CodeMissingField || v.Code == device.CodeUnexpectedField):
		return Verdict{Expect: Expect{Status: 400, Codes: []string{device.CodeMissingField, device.CodeUnexpectedField}}}
	case !v.OK:
		return Verdict{Expect: Expect{Status: v.Status, Codes: append([]string{v.Code}, v.Also...), Field: v.Field}}
	case f.wrongSign:
		return Verdict{Expect: refuse(401, "", device.CodeBadSignature)}
	case f.needsWindow && m.W.Window > 0 && absDuration(f.shifted(time.Time{}, m.W.Window).Sub(time.Time{})) > m.W.Window:
		return Verdict{Expect: refuse(401, "", device.CodeStaleTimestamp)}
	}
	return plain
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func deviceOperation(k Kind) device.Operation {
	switch k {
	case Command:
		return device.SendCommand
	case Message:
		return device.SendMessage
	}
	return device.UpdateName
}

// WireForms lists the wire forms' names, sorted.
func WireForms() []string {
	out := append([]string(nil), wireSlugs...)
	sort.Strings(out)
	return out
}

// WireRule is the rule a disagreement about form name falls under; "" for
// none.
func WireRule(name string) string {
	if f, ok := wireTable[name]; ok {
		return f.rule
	}
	return ""
}

// WireNeedsClock says whether form name's verdict holds only if the
// target's clock agrees with ours to within seconds: a timestamp a few
// seconds past the window, which a target whose clock is that far off
// accepts. Read-only comparisons never send it.
func WireNeedsClock(name string) bool {
	f, ok := wireTable[name]
	return ok && f.needsWindow && absDuration(f.shiftExtra) < time.Minute && f.shiftExtra != 0
}
