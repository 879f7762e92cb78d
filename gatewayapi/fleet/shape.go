package fleet

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// shape is what a fleet file may hold at one place: a text, a list of one
// shape, or a mapping with known keys. Fleet files are written by vendors
// by hand, so a mistake is reported with the YAML key, its line and what is
// expected there, in the file's words rather than Go's.
type shape struct {
	kind nodeKind
	// what says in a few words what is expected ("a list of accounts").
	what string
	// item is the shape of each element of a list.
	item *shape
	// keys are the known keys of a mapping, in the order the doc lists
	// them; free says any key is allowed (a device's state).
	keys []keyShape
	free *shape
}

type nodeKind int

const (
	textNode nodeKind = iota
	listNode
	mapNode
)

type keyShape struct {
	name string
	s    *shape
}

var (
	textShape    = &shape{kind: textNode, what: "a text"}
	valueShape   = &shape{kind: textNode, what: "a text or a number"}
	stateShape   = &shape{kind: mapNode, what: "a mapping of state keys to values, such as {dimming: 40}", free: valueShape}
	deviceShape  = &shape{kind: mapNode, what: "a device: {sn, type, name, state}", keys: []keyShape{{"sn", textShape}, {"type", textShape}, {"name", textShape}, {"state", stateShape}}}
	gatewayShape = &shape{kind: mapNode, what: "a gateway: {mac, devices}", keys: []keyShape{{"mac", textShape}, {"devices", &shape{kind: listNode, what: "a list of devices", item: deviceShape}}}}
	keyShapeOf   = &shape{kind: mapNode, what: "an api key: {api_key, secret}", keys: []keyShape{{"api_key", textShape}, {"secret", textShape}}}
	accountShape = &shape{kind: mapNode, what: "an account: {myservice_id, api_keys, gateways}", keys: []keyShape{
		{"myservice_id", textShape},
		{"api_keys", &shape{kind: listNode, what: "a list of api keys", item: keyShapeOf}},
		{"gateways", &shape{kind: listNode, what: "a list of gateways", item: gatewayShape}},
	}}
	fleetShape = &shape{kind: mapNode, what: "a fleet: a mapping with accounts (see docs/fleet.md)", keys: []keyShape{
		{"sign", textShape},
		{"sign_command", &shape{kind: listNode, what: "a command as a list of words, such as [./sign.sh]", item: textShape}},
		{"timestamp_tz", textShape},
		{"timestamp_window", textShape},
		{"accounts", &shape{kind: listNode, what: "a list of accounts", item: accountShape}},
	}}
)

// checkShape walks the document against the fleet's shape and returns the
// first mismatch as "line N: path: what is wrong; expected ...".
func checkShape(doc *yaml.Node) error {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	return walkShape(root, fleetShape, "")
}

func walkShape(n *yaml.Node, s *shape, path string) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	where := path
	if where == "" {
		where = "the fleet"
	}
	switch s.kind {
	case textNode:
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s: expected %s, found %s", n.Line, where, s.what, describeNode(n))
		}
		return nil
	case listNode:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("line %d: %s: expected %s (items starting with -), found %s", n.Line, where, s.what, describeNode(n))
		}
		for i, c := range n.Content {
			if err := walkShape(c, s.item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" && path != "" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: %s: expected %s, found %s", n.Line, where, s.what, describeNode(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		sub := join(path, name)
		if seen[name] {
			return fmt.Errorf("line %d: %s: the key appears twice", k.Line, sub)
		}
		seen[name] = true
		if s.free != nil {
			if err := walkShape(v, s.free, sub); err != nil {
				return err
			}
			continue
		}
		ks := s.key(name)
		if ks == nil {
			return fmt.Errorf("line %d: %s: unknown key %q; expected %s%s", k.Line, where, name, s.keyList(), suggest(name, s))
		}
		if err := walkShape(v, ks, sub); err != nil {
			return err
		}
	}
	return nil
}

func (s *shape) key(name string) *shape {
	for _, k := range s.keys {
		if k.name == name {
			return k.s
		}
	}
	return nil
}

func (s *shape) keyList() string {
	names := make([]string, len(s.keys))
	for i, k := range s.keys {
		names[i] = k.name
	}
	if len(names) == 1 {
		return names[0]
	}
	return "one of " + strings.Join(names, ", ")
}

// suggest names the known key closest to a misspelt one.
func suggest(name string, s *shape) string {
	best, bestD := "", 3
	for _, k := range s.keys {
		if d := distance(strings.ToLower(name), k.name); d < bestD {
			best, bestD = k.name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// distance is the Levenshtein distance of two short keys.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		return fmt.Sprintf("%q", v)
	}
	return "something else"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var segment = regexp.MustCompile(`^([A-Za-z_]+)((?:\[\d+\])*)$`)

// lineOf finds the line of a path such as accounts[0].gateways[1].mac in
// the document; 0 when it is not there.
func lineOf(doc *yaml.Node, path string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, seg := range strings.Split(path, ".") {
		m := segment.FindStringSubmatch(seg)
		if m == nil || n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == m[1] {
				line, next = n.Content[i].Line, n.Content[i+1]
				break
			}
		}
		if next == nil {
			return line
		}
		n = next
		for _, idx := range strings.FieldsFunc(m[2], func(r rune) bool { return r == '[' || r == ']' }) {
			i, _ := strconv.Atoi(idx)
			if n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		}
		// a value on its own line (a nested mapping) is reported at its key.
		if n.Kind == yaml.ScalarNode {
			line = n.Line
		}
	}
	return line
}

// withLine prefixes a Check error that starts with a path with the path's
// line in the document.
func withLine(doc *yaml.Node, err error) error {
	msg := err.Error()
	path, _, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(path, " \"") {
		return err
	}
	if l := lineOf(doc, path); l > 0 {
		return fmt.Errorf("line %d: %s", l, msg)
	}
	return err
}
