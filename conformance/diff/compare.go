package diff

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Verdicts beside a difference: which side the rule table agrees with.
const (
	SideA     = "A"
	SideB     = "B"
	BothSides = "both"
	Neither   = "neither"
	NotJudged = "not judged"
)

// Observation is what one side got at one step: the answer normalised
// (status code, status, error code and field: error wording is not
// behaviour) and the state its observer showed after it, with the
// exchange as sent (api_key masked, no sign) and a curl line.
type Observation struct {
	Answer   string `json:"answer,omitempty"`
	State    string `json:"state,omitempty"`
	Request  string `json:"request,omitempty"`
	Response string `json:"response,omitempty"`
	URL      string `json:"url,omitempty"`
	Curl     string `json:"curl,omitempty"`
	// ReadCurl reads the state shown, when one was read after the step.
	ReadCurl string `json:"read_curl,omitempty"`
}

// Step is one operation of a shrunk sequence as both sides answered it.
type Step struct {
	Op      explore.Op  `json:"op"`
	A       Observation `json:"a"`
	B       Observation `json:"b"`
	Differs bool        `json:"differs,omitempty"`
}

// Difference is one distinct difference: its first occurrence, shrunk,
// and how many times it was met.
type Difference struct {
	// Key tells distinct differences apart: rule, operation, answer or
	// state, and the side the rule table agrees with.
	Key string `json:"key"`
	// Kind is "answer" or "state".
	Kind string `json:"kind"`
	// Operation is the kind of operation at the step that differed.
	Operation string `json:"operation"`
	explore.Judgement
	// Verdict says which side the rule table agrees with: A, B, both (an
	// Open form, or a choice the texts leave), neither, or not judged.
	Verdict    string `json:"verdict"`
	VerdictWhy string `json:"verdict_why"`
	// Expected is the rule table's prediction at the step.
	Expected string `json:"expected,omitempty"`
	Count    int    `json:"count"`
	Round    int    `json:"round"`
	// FoundAfter is how long after the start of the comparison it was
	// first met.
	FoundAfter string      `json:"found_after"`
	Index      int         `json:"index"`
	Op         explore.Op  `json:"op"`
	A          Observation `json:"a"`
	B          Observation `json:"b"`
	// Original is the operations up to the first occurrence; Ops the
	// shrunk sequence, Steps it as last run on both sides.
	Original     int          `json:"original_operations"`
	Ops          []explore.Op `json:"operations"`
	Steps        []Step       `json:"steps,omitempty"`
	ShrinkRuns   int          `json:"shrink_runs"`
	ShrinkTime   string       `json:"shrink_time"`
	Reproducible bool         `json:"reproducible"`
	// Script is the reproduction written for it.
	Script string `json:"script,omitempty"`
	keys   []string
	tries  int // later occurrences shrunk in its place
}

// answerClass is an answer normalised: status code, status, error code
// and field, and the media type when it is not the request's format
// (error wording is not behaviour; the format of the answer is, CONTRACT
// 4).
func answerClass(r explore.Result) string {
	if r.Err != "" {
		return "no answer"
	}
	if m := answerMedia(r); m != requestMedia(r) {
		return r.Answer.String() + " (answered as " + m + ")"
	}
	return r.Answer.String()
}

// answerMedia is the answer's media type, parameters left out: "json" and
// "xml" for the two formats' (text/xml is XML).
func answerMedia(r explore.Result) string {
	ct := r.Exchange.ResponseHeaders["Content-Type"]
	if f, ok := oracle.FormatOfContentType(ct); ok {
		return formatName(f)
	}
	mt, _, _ := strings.Cut(ct, ";")
	if mt = strings.ToLower(strings.TrimSpace(mt)); mt == "" {
		return "no media type"
	}
	return mt
}

// requestMedia is the format the request was sent in, "json" when its
// Content-Type names none (CONTRACT 4 answers in JSON then).
func requestMedia(r explore.Result) string {
	if f, ok := oracle.FormatOfContentType(r.Exchange.RequestHeaders["Content-Type"]); ok {
		return formatName(f)
	}
	return "json"
}

func formatName(f device.Format) string {
	if f == device.XML {
		return "xml"
	}
	return "json"
}

// mediaAllowed says whether the answer's media type is one CONTRACT 4
// allows: a success in the request's format; an error in it or in JSON
// (where the format could not be told).
func mediaAllowed(r explore.Result) bool {
	m := answerMedia(r)
	return m == requestMedia(r) || !r.Answer.Success && m == "json"
}

func maskKey(k string) string { return client.MaskAPIKey(k) }

// observation is what a side got, for the reports.
func observation(op explore.Op, r explore.Result, v stateView) Observation {
	o := Observation{State: v.String(), ReadCurl: v.curl}
	if !op.IsRead() {
		o.Answer = answerClass(r)
		ex := r.Exchange.Redacted().Masked()
		o.Request, o.Response, o.URL = ex.RequestBody, ex.ResponseBody, ex.URL
		o.Curl = explore.Curl(op, r)
	} else {
		o.URL = r.Exchange.URL
		o.Curl = explore.Curl(op, r)
	}
	return o
}

func (v stateView) String() string {
	switch {
	case v.err != "":
		return "no answer: " + v.err
	case v.dev != nil:
		return v.dev.String()
	case v.log != nil:
		return describeLog(v.log)
	}
	return ""
}

func describeLog(l []explore.Msg) string {
	if len(l) == 0 {
		return "no messages"
	}
	from := max(0, len(l)-3)
	s := fmt.Sprintf("%d messages", len(l))
	if from > 0 {
		s += ", newest"
	}
	s += ":"
	for _, m := range l[from:] {
		s += fmt.Sprintf(" %s=%q", m.Type, m.Value)
	}
	return s
}

// compareAnswers is the difference between two answers to op, or nil.
func (d *Differ) compareAnswers(op explore.Op, v explore.Verdict, ra, rb explore.Result) *Difference {
	ca, cb := answerClass(ra), answerClass(rb)
	if ca == cb {
		return nil
	}
	okA := ra.Err == "" && v.Expect.Matches(ra.Answer) && mediaAllowed(ra)
	okB := rb.Err == "" && v.Expect.Matches(rb.Answer) && mediaAllowed(rb)
	// The rule of the side that parts from the table (A's when both or
	// neither do).
	j := explore.Classify(d.cfg.Rules, op, v, ra)
	if okA && !okB {
		j = explore.Classify(d.cfg.Rules, op, v, rb)
	}
	if ra.Err == "" && rb.Err == "" && ra.Answer == rb.Answer {
		// The same answer in another media type.
		j = explore.Judgement{Level: explore.SHOULD, Rule: "C-4.answers", Quote: explore.RuleQuote("C-4.answers")}
	}
	x := &Difference{Kind: "answer", Operation: string(op.Kind), Judgement: j, Op: op, Expected: v.Expect.String(),
		A: observation(op, ra, stateView{}), B: observation(d.mapB.op(op), rb, stateView{})}
	x.Verdict, x.VerdictWhy = verdict(okA, okB, v.Open)
	if v.Open {
		x.VerdictWhy = "an Open form: neither text decides it, so each answer is allowed"
	} else {
		x.VerdictWhy += "; the rule table expects " + v.Expect.String()
	}
	x.Key = strings.Join([]string{x.Rule, x.Operation, "answer", x.Verdict}, "|")
	return x
}

func verdict(okA, okB, open bool) (string, string) {
	switch {
	case open || okA && okB:
		return BothSides, "each side's answer is one the rule table allows"
	case okA:
		return SideA, "A agrees with the rule table, B does not"
	case okB:
		return SideB, "B agrees with the rule table, A does not"
	}
	return Neither, "neither side agrees with the rule table"
}

// compareState compares what op changed on each side, as each side's
// observer shows it against its own state at the start of the sequence.
func (d *Differ) compareState(op, r explore.Op, m *explore.Model, a, b *sideRun, va, vb stateView) *Difference {
	p := explore.Partition(r)
	ia, ib := a.initial[p], b.initial[p]
	if (va.err == "") == (vb.err == "") && (va.err != "" || ia.err != "" || ib.err != "") {
		return nil // nothing to compare: neither observer answered
	}
	if va.err == "" && vb.err == "" && sameDelta(ia, va, ib, vb, d.noise) {
		return nil
	}
	return d.stateDifference(op, r, m, ia, ib, va, vb)
}

// stateDifference builds the difference of two observed states.
func (d *Differ) stateDifference(op, r explore.Op, m *explore.Model, ia, ib, va, vb stateView) *Difference {
	keys := deltaKeys(ia, va, ib, vb, d.noise)
	x := &Difference{Kind: "state", Operation: string(op.Kind), Judgement: explore.Judgement{Level: explore.MUST, Rule: "C-3.rejected-changes-nothing",
		Quote: explore.RuleQuote("C-3.rejected-changes-nothing")}, Op: op, keys: keys,
		A: Observation{State: va.String()}, B: Observation{State: vb.String()}}
	x.Verdict, x.VerdictWhy = NotJudged, "the rule table does not know this state (an earlier request was open, or the two sides started apart)"
	if m != nil {
		if pred, known := modelKnows(m, r); known && va.err == "" && vb.err == "" {
			okA, okB := matches(pred, va), matches(pred, vb)
			x.Verdict, x.VerdictWhy = verdict(okA, okB, false)
			x.Expected = pred.String()
			x.VerdictWhy += "; the rule table expects " + pred.String()
		}
	}
	x.Key = strings.Join([]string{x.Rule, x.Operation, "state", x.Verdict}, "|")
	return x
}

func matches(pred, got stateView) bool {
	if pred.dev != nil && got.dev != nil {
		return explore.CheckDevice(*pred.dev, *got.dev) == ""
	}
	return explore.CheckLog(pred.log, got.log) == ""
}

// sameView compares two observed states (numbers by value).
func sameView(x, y stateView, n *noise) bool {
	if (x.err == "") != (y.err == "") {
		return false
	}
	if x.dev != nil || y.dev != nil {
		if x.dev == nil || y.dev == nil {
			return false
		}
		return len(deviceDiff(*x.dev, *y.dev, n)) == 0
	}
	if n != nil && n.state["messages"] != "" {
		return true
	}
	return sameLog(x.log, y.log)
}

func sameLog(a, b []explore.Msg) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// deviceDiff lists the keys (name included) whose values differ.
func deviceDiff(x, y explore.DeviceState, n *noise) []string {
	var out []string
	if x.Name != y.Name && (n == nil || n.state["name"] == "") {
		out = append(out, "name")
	}
	keys := map[string]bool{}
	for k := range x.State {
		keys[k] = true
	}
	for k := range y.State {
		keys[k] = true
	}
	for k := range keys {
		if n != nil && n.state[k] != "" {
			continue
		}
		a, okA := x.State[k]
		b, okB := y.State[k]
		if okA != okB || !explore.SameValue(a, b) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// delta is what changed from i to v: each key's new value (name as
// "name"; a key gone as "\x00gone"), or the messages appended.
type delta struct {
	dev map[string]string
	log []explore.Msg
}

func deltaOf(i, v stateView) delta {
	if v.dev != nil {
		out := map[string]string{}
		if i.dev == nil {
			out["name"] = v.dev.Name
			for k, x := range v.dev.State {
				out[k] = x
			}
			return delta{dev: out}
		}
		if i.dev.Name != v.dev.Name {
			out["name"] = v.dev.Name
		}
		for k, x := range v.dev.State {
			if y, ok := i.dev.State[k]; !ok || !explore.SameValue(x, y) {
				out[k] = x
			}
		}
		for k := range i.dev.State {
			if _, ok := v.dev.State[k]; !ok {
				out[k] = "\x00gone"
			}
		}
		return delta{dev: out}
	}
	if len(v.log) >= len(i.log) && sameLog(i.log, v.log[:len(i.log)]) {
		return delta{log: v.log[len(i.log):]}
	}
	return delta{log: v.log} // the log was cut: compare what it shows
}

// sameDelta says whether both sides changed the same keys to the same
// values (and appended the same messages) since their starts.
func sameDelta(ia, va, ib, vb stateView, n *noise) bool {
	return len(deltaKeys(ia, va, ib, vb, n)) == 0
}

// deltaKeys lists what changed differently on the two sides.
func deltaKeys(ia, va, ib, vb stateView, n *noise) []string {
	if va.err != "" || vb.err != "" {
		return []string{"observer"}
	}
	da, db := deltaOf(ia, va), deltaOf(ib, vb)
	if va.dev != nil || vb.dev != nil {
		keys := map[string]bool{}
		for k := range da.dev {
			keys[k] = true
		}
		for k := range db.dev {
			keys[k] = true
		}
		var out []string
		for k := range keys {
			if n != nil && n.state[k] != "" {
				continue
			}
			x, okA := da.dev[k]
			y, okB := db.dev[k]
			if okA != okB || !explore.SameValue(x, y) {
				// A side that did not change k may already have had the
				// value the other changed it to.
				if !okA && explore.SameValue(valueOf(va, k), y) || !okB && explore.SameValue(valueOf(vb, k), x) {
					continue
				}
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	if n != nil && n.state["messages"] != "" {
		return nil
	}
	if !sameLog(da.log, db.log) {
		return []string{"messages"}
	}
	return nil
}

// valueOf is a key's value in an observed device ("name": its name).
func valueOf(v stateView, k string) string {
	if v.dev == nil {
		return "\x00none"
	}
	if k == "name" {
		return v.dev.Name
	}
	if x, ok := v.dev.State[k]; ok {
		return x
	}
	return "\x00none"
}

// noise is what calibration found differing between two runs of A.
type noise struct {
	answers map[string]string // rule|operation -> example
	state   map[string]string // state key, "name" or "messages" -> example
}

// Ignored is one thing calibration found to differ between two runs of
// the same operations against A, and so ignored.
type Ignored struct {
	What    string `json:"what"`
	Why     string `json:"why"`
	Example string `json:"example"`
}

func (n *noise) ignores(x *Difference) bool {
	if x.Kind == "answer" {
		return n.answers[x.Rule+"|"+x.Operation] != ""
	}
	if len(x.keys) == 0 {
		return false
	}
	for _, k := range x.keys {
		if n.state[k] == "" {
			return false
		}
	}
	return true
}

func (n *noise) list() []Ignored {
	var out []Ignored
	for _, k := range sortedKeys(n.answers) {
		rule, op, _ := strings.Cut(k, "|")
		out = append(out, Ignored{What: fmt.Sprintf("the answers to %s requests under rule %s", op, rule),
			Why: "they differed between two runs of the same operations against A (--calibrate)", Example: n.answers[k]})
	}
	for _, k := range sortedKeys(n.state) {
		what := "the state key " + k
		if k == "messages" {
			what = "the message logs"
		}
		out = append(out, Ignored{What: what, Why: "it differed between two runs of the same operations against A (--calibrate)", Example: n.state[k]})
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// mapper turns an operation on A's fleet into the same operation on B's:
// the n-th account, key, gateway and device of one are the n-th of the
// other.
type mapper struct {
	acct, key, mac, sn map[string]string
}

func newMapper(a, b *explore.World) (*mapper, error) {
	m := &mapper{acct: map[string]string{}, key: map[string]string{}, mac: map[string]string{}, sn: map[string]string{}}
	shape := errorf("the two fleets differ in shape: diff sends A's n-th account, gateway and device's operations to B's n-th, so both need the same accounts with keys, gateways and devices (by type), in the same order")
	if len(a.Accounts) != len(b.Accounts) {
		return nil, shape
	}
	for i, x := range a.Accounts {
		y := b.Accounts[i]
		m.acct[x.ID], m.key[x.Key] = y.ID, y.Key
		if len(x.Gateways) != len(y.Gateways) {
			return nil, shape
		}
		for j, g := range x.Gateways {
			h := y.Gateways[j]
			m.mac[g.MAC] = h.MAC
			if len(g.Devices) != len(h.Devices) {
				return nil, shape
			}
			for k, dv := range g.Devices {
				if dv.Type != h.Devices[k].Type {
					return nil, shape
				}
				m.sn[dv.SN] = h.Devices[k].SN
			}
		}
	}
	return m, nil
}

type errorf string

func (e errorf) Error() string { return string(e) }

func (m *mapper) op(op explore.Op) explore.Op {
	if v, ok := m.acct[op.Account]; ok {
		op.Account = v
	}
	if v, ok := m.key[op.Key]; ok {
		op.Key = v
	}
	if v, ok := m.mac[op.MAC]; ok {
		op.MAC = v
	}
	if v, ok := m.sn[op.SN]; ok {
		op.SN = v
	}
	return op
}

func (m *mapper) ops(ops []explore.Op) []explore.Op {
	out := make([]explore.Op, len(ops))
	for i, op := range ops {
		out[i] = m.op(op)
	}
	return out
}
