// Package check declares conformance checks: each carries a stable ID, a
// level, the published section it traces to and Ginkgo labels, all added in
// one place so that no spec writes its metadata by hand and the catalog
// (docs/checks.md) can be generated from a dry run.
package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2"
)

// Level is how strongly a check binds.
type Level string

const (
	// Must follows from the published interface.
	Must Level = "MUST"
	// Should follows only from our CONTRACT.
	Should Level = "SHOULD"
	// Info probes a gap of the interface and judges nothing.
	Info Level = "INFO"
)

// NoSample starts the reason of a check skipped because the form it sends
// cannot be derived from the fleet's value: the report counts such checks
// apart, as a gap of the fleet rather than of the target.
const NoSample = "no sample "

// Levels in order of strength.
var Levels = []Level{Must, Should, Info}

// Meta is what a check is. ID is stable across releases: reports,
// certificates and CI filters refer to it.
type Meta struct {
	ID    string `json:"id"`
	Level Level  `json:"level"`
	// Section is the published section the check traces to ("2.3", "4.1").
	Section string `json:"section"`
	// Contract is the CONTRACT section for SHOULD and INFO checks ("2", "4").
	Contract string `json:"contract,omitempty"`
	// Title says in a few words what is sent; Assertion what must follow,
	// in MUST / SHOULD wording.
	Title     string `json:"title"`
	Assertion string `json:"assertion"`
	// Operation, Format and DeviceType are empty when the check is not
	// about one of them.
	Operation  string `json:"operation,omitempty"`
	Format     string `json:"format,omitempty"`
	DeviceType string `json:"device_type,omitempty"`
	// Tags are extra labels: "sim", "parity", "edge", "auth", ...
	Tags []string `json:"tags,omitempty"`
	// Quote is the sentence of the two texts a refusal rests on, and
	// Inference, for a MUST, the step of reasoning from a published
	// sentence that makes it one; the Assertion carries both.
	Quote     string `json:"-"`
	Inference string `json:"-"`
	// Traits say what running the check takes; a --parallel run reads
	// them (never the check's wording) to share the checks out.
	Traits Traits `json:"-"`
}

// Traits are what running a check takes, declared with the check.
type Traits struct {
	// Shared: the check touches more than its worker's own device of each
	// type (the gateway's message log, which every message appends to,
	// other devices, other gateways or accounts), so a --parallel run
	// runs it on worker 0 alone.
	Shared bool
	// Cost is what the check costs against a slow target, relative to a
	// request refused at once (1): a request that goes all the way to the
	// store weighs more, a parity check sends twice, a probe several
	// times. Zero counts as 1.
	Cost int
}

// Weight is the check's cost, at least 1.
func (t Traits) Weight() int { return max(t.Cost, 1) }

// labelReserved are the characters a Ginkgo label cannot hold.
const labelReserved = "&|!,()/[] "

// Slug makes a label- and ID-safe word of s: "Light Dimmer" -> "light-dimmer".
// Lowered, each run of characters other than A-Z, a-z, 0-9 and _.:- is
// one "-", and no "-" begins or ends it. Every check's labels are made
// of slugs as the suite is declared, so it is a loop, not a pattern.
func Slug(s string) string {
	s = strings.ToLower(s)
	b := make([]byte, 0, len(s))
	unsafe := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !labelSafe(c) {
			unsafe = true
			continue
		}
		if unsafe {
			b = append(b, '-')
			unsafe = false
		}
		b = append(b, c)
	}
	return strings.Trim(string(b), "-")
}

// labelSafe says whether a label keeps c as it is: A-Z, a-z, 0-9 and _.:-
// (a byte of a multi-byte character never is).
func labelSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_.:-", c) >= 0
}

// IDLabel prefixes the label that carries a check's ID: the report reads
// a spec's ID from its labels, never from its display text.
const IDLabel = "id:"

// Labels are the check's Ginkgo labels: its ID, level, operation, format,
// device type, section and tags, so that --ginkgo.label-filter selects on
// any.
func (m Meta) Labels() ginkgo.Labels {
	l := ginkgo.Labels{IDLabel + m.ID, "level:" + string(m.Level), "section:" + m.Section}
	if m.Operation != "" {
		l = append(l, "op:"+m.Operation)
	}
	if m.Format != "" {
		l = append(l, "format:"+m.Format)
	}
	if m.DeviceType != "" {
		l = append(l, "type:"+Slug(m.DeviceType))
	}
	for _, t := range m.Tags {
		l = append(l, Slug(t))
	}
	return l
}

// Text is the spec text Ginkgo shows: "[ID] title". It is for people
// (and for --check's focus expression); nothing reads the ID back from it.
func (m Meta) Text() string { return "[" + m.ID + "] " + m.Title }

// IDFromLabels is the check ID among a spec's labels (see Labels), or ""
// for a spec that is no check.
func IDFromLabels(labels []string) string {
	for _, l := range labels {
		if id, ok := strings.CutPrefix(l, IDLabel); ok {
			return id
		}
	}
	return ""
}

// English mends the articles of a title or assertion built from parts:
// "an" before a vowel, since titles are built from parts ("a " + type
// name), and "a Appliance Module" or "a update_name request" reads badly in
// a report a certifier reads.
func English(s string) string {
	var b []byte
	last := 0
	for i := 0; i+2 < len(s); i++ {
		if (s[i] == 'a' || s[i] == 'A') && s[i+1] == ' ' && strings.IndexByte("AEIOUaeiou", s[i+2]) >= 0 &&
			(i == 0 || !isWordByte(s[i-1])) {
			b = append(b, s[last:i+1]...)
			b = append(b, 'n')
			last = i + 1
			i += 2 // as the pattern, which consumes the vowel: "a a a" is "an a a"
		}
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// isWordByte is regexp's \w: an ASCII letter, digit or underscore.
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// It declares one check as a Ginkgo spec. It panics on a duplicate or
// incomplete ID while the tree is built, so a broken catalog never runs.
func It(m Meta, body func(ginkgo.SpecContext), decorations ...any) bool {
	m = Finish(m)
	validate(m)
	args := append([]any{m.Labels()}, decorations...)
	args = append(args, body)
	return ginkgo.It(m.Text(), args...)
}

// Finish is m as It declares it: titles and assertions read as English.
func Finish(m Meta) Meta {
	m.Title, m.Assertion = English(m.Title), English(m.Assertion)
	return m
}

// validate panics on an incomplete ID or one that cannot be a label.
func validate(m Meta) {
	if m.ID == "" || m.Level == "" || m.Section == "" || m.Title == "" || m.Assertion == "" {
		panic(fmt.Sprintf("check: incomplete metadata %+v", m))
	}
	if strings.ContainsAny(m.ID, labelReserved) {
		panic("check: ID " + m.ID + " cannot be a label (it has one of " + labelReserved + ")")
	}
}

// Catalog is every check of a suite, by ID: what the reports, the console
// and the schedule read of a check, handed to them as a value. The zero
// Catalog knows no check.
type Catalog struct {
	// all is sorted by ID; byID indexes it.
	all  []Meta
	byID map[string]Meta
}

// NewCatalog is the catalog of ms, each as It declares it (Finish). It
// panics on an incomplete or duplicate ID: a broken catalog never runs.
func NewCatalog(ms []Meta) Catalog {
	c := Catalog{all: make([]Meta, 0, len(ms)), byID: make(map[string]Meta, len(ms))}
	for _, m := range ms {
		validate(m)
		if _, dup := c.byID[m.ID]; dup {
			panic("check: duplicate check ID " + m.ID)
		}
		c.byID[m.ID] = m
		c.all = append(c.all, m)
	}
	sort.Slice(c.all, func(i, j int) bool { return c.all[i].ID < c.all[j].ID })
	return c
}

// Lookup is a check's metadata.
func (c Catalog) Lookup(id string) (Meta, bool) {
	m, ok := c.byID[id]
	return m, ok
}

// All is every check, sorted by ID: the catalog's own list, not to be
// changed.
func (c Catalog) All() []Meta { return c.all }
