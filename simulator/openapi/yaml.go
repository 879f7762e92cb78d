package openapi

import (
	"strconv"

	"go.yaml.in/yaml/v3"
)

// obj is a YAML mapping that keeps its keys in the order written, so that
// the document reads top-down as a person would write it and regenerating
// it gives the same bytes.
type obj []kv

type kv struct {
	k string
	v any
}

// o builds an obj from alternating keys and values.
func o(pairs ...any) obj {
	if len(pairs)%2 != 0 {
		panic("openapi: o() needs key, value pairs")
	}
	m := make(obj, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		m = append(m, kv{pairs[i].(string), pairs[i+1]})
	}
	return m
}

// set appends or replaces key k.
func (m obj) set(k string, v any) obj {
	for i := range m {
		if m[i].k == k {
			m[i].v = v
			return m
		}
	}
	return append(m, kv{k, v})
}

// MarshalYAML implements yaml.Marshaler.
func (m obj) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, e := range m {
		var v yaml.Node
		if err := v.Encode(e.v); err != nil {
			return nil, err
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e.k}, &v)
	}
	return n, nil
}

// ref is a JSON reference to a component.
func ref(kind, name string) obj { return o("$ref", "#/components/"+kind+"/"+name) }

func itoa(i int) string { return strconv.Itoa(i) }
