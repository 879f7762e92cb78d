package report

import "reflect"

// MaskStrings is maskStrings for a value outside the package (a worker's
// Ginkgo report, masked before it is handed to the run that merges it).
func MaskStrings(v any, mask func(string) string) { maskStrings(v, mask) }

// maskStrings replaces every string reachable from v (a pointer) in
// place, in every exported field, slice, array, map value and pointer, by
// mask's answer: the reports then hold no value the mask knows, wherever
// a check quoted it (a failure, an exchange, a curl line, a title).
func maskStrings(v any, mask func(string) string) {
	if mask == nil {
		return
	}
	maskValue(reflect.ValueOf(v), mask)
}

// ourOwn are the fields the harness writes from its own catalog, never
// from what a target sent: a check's ID, title and labels may hold a
// word that is also a fleet's key (the demo fleet's other-key names the
// fleet.*.other-key-… checks), and must stay as the catalog has them.
var ourOwn = map[string]bool{"ID": true, "Title": true, "Assertion": true, "Labels": true, "Tags": true, "Level": true,
	"Section": true, "Contract": true, "Operation": true, "Format": true, "DeviceType": true, "Outcome": true, "State": true,
	"Verdict": true, "SameExchangesAs": true, "Node": true, "Catalog": true, "FailOn": true,
	// Ginkgo's: a spec's text and labels are the check's title and ID.
	"LeafNodeText": true, "LeafNodeLabels": true, "ContainerHierarchyTexts": true, "ContainerHierarchyLabels": true}

func maskValue(v reflect.Value, mask func(string) string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			e := v.Elem()
			if v.Kind() == reflect.Interface {
				// An interface's value is not addressable: mask a copy and
				// put it back.
				if e.Kind() == reflect.String && v.CanSet() {
					v.Set(reflect.ValueOf(mask(e.String())).Convert(e.Type()))
					return
				}
				if e.Kind() != reflect.Pointer && e.Kind() != reflect.Map && e.Kind() != reflect.Slice {
					return
				}
			}
			maskValue(e, mask)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(mask(v.String()))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() && !ourOwn[f.Name] {
				maskValue(v.Field(i), mask)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			maskValue(v.Index(i), mask)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		iter := v.MapRange()
		type kv struct{ k, v reflect.Value }
		var set []kv
		for iter.Next() {
			c := reflect.New(iter.Value().Type()).Elem()
			c.Set(iter.Value())
			maskValue(c, mask)
			set = append(set, kv{iter.Key(), c})
		}
		for _, e := range set {
			v.SetMapIndex(e.k, e.v)
		}
	}
}
