package fleet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"
)

// WriteYAML writes the fleet as a fleet file, one device to a line in flow
// style, as CONTRACT section 5 shows it. It streams: a million devices take
// about a second and no more memory than the fleet, where a YAML library
// builds a node tree many times the fleet's size. Every string is written
// double-quoted with JSON escapes (valid YAML), so no name, key or secret
// can be read back as anything else; Parse reads the file back to an equal
// fleet.
func (f *Fleet) WriteYAML(w io.Writer) error {
	b := bufio.NewWriterSize(w, 64<<10)
	y := yamlWriter{b: b}
	if f.Sign != "" {
		y.raw("sign: ")
		y.str(f.Sign)
		y.raw("\n")
	}
	if len(f.SignCommand) > 0 {
		y.raw("sign_command: [")
		for i, a := range f.SignCommand {
			if i > 0 {
				y.raw(", ")
			}
			y.str(a)
		}
		y.raw("]\n")
	}
	if f.TimestampTZ != "" {
		y.raw("timestamp_tz: ")
		y.str(f.TimestampTZ)
		y.raw("\n")
	}
	if f.TimestampWindow != nil {
		y.raw("timestamp_window: ")
		y.str(f.TimestampWindow.String())
		y.raw("\n")
	}
	if len(f.Accounts) == 0 {
		y.raw("accounts: []\n")
	} else {
		y.raw("accounts:\n")
	}
	for _, a := range f.Accounts {
		y.raw("  - myservice_id: ")
		y.str(a.ID)
		y.raw("\n")
		if len(a.APIKeys) > 0 {
			y.raw("    api_keys:\n")
		}
		for _, k := range a.APIKeys {
			y.raw("      - {api_key: ")
			y.str(k.Key)
			y.raw(", secret: ")
			y.str(k.Secret)
			y.raw("}\n")
		}
		if len(a.Gateways) > 0 {
			y.raw("    gateways:\n")
		}
		for _, g := range a.Gateways {
			y.raw("      - mac: ")
			y.str(g.MAC)
			y.raw("\n")
			if len(g.Devices) > 0 {
				y.raw("        devices:\n")
			}
			for _, d := range g.Devices {
				y.device(d)
			}
		}
	}
	if y.err != nil {
		return y.err
	}
	return b.Flush()
}

type yamlWriter struct {
	b   *bufio.Writer
	buf []byte
	err error
}

func (y *yamlWriter) raw(s string) {
	if y.err == nil {
		_, y.err = y.b.WriteString(s)
	}
}

func (y *yamlWriter) device(d Device) {
	y.raw("          - {sn: ")
	y.str(d.SN)
	y.raw(", type: ")
	y.str(d.Type)
	if d.Name != "" {
		y.raw(", name: ")
		y.str(d.Name)
	}
	if len(d.State) > 0 {
		y.raw(", state: {")
		keys := make([]string, 0, len(d.State))
		for k := range d.State {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				y.raw(", ")
			}
			y.str(k)
			y.raw(": ")
			y.value(d.State[k])
		}
		y.raw("}")
	}
	y.raw("}\n")
}

// value writes a state value: a string quoted, a number or boolean as
// itself, anything else as JSON (which YAML reads).
func (y *yamlWriter) value(v any) {
	switch x := v.(type) {
	case string:
		y.str(x)
	case int:
		y.raw(strconv.Itoa(x))
	case int64:
		y.raw(strconv.FormatInt(x, 10))
	case uint64:
		y.raw(strconv.FormatUint(x, 10))
	case float64:
		y.raw(strconv.FormatFloat(x, 'g', -1, 64))
	case bool:
		y.raw(strconv.FormatBool(x))
	default:
		b, err := json.Marshal(x)
		if err != nil && y.err == nil {
			y.err = err
		}
		y.raw(string(b))
	}
}

// str writes s as a double-quoted scalar with JSON escapes.
func (y *yamlWriter) str(s string) {
	b := append(y.buf[:0], '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				b = append(b, `\ufffd`...)
			case r <= 0xffff && !yamlPrintable(r), r == 0x85 || r == 0x2028 || r == 0x2029: // line breaks YAML would fold
				b = append(b, `\u`...)
				b = append(b, fmt.Sprintf("%04x", r)...)
			default:
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c < 0x20 || c == 0x7f:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
		i++
	}
	b = append(b, '"')
	y.buf = b
	if y.err == nil {
		_, y.err = y.b.Write(b)
	}
}

// yamlPrintable is YAML's c-printable above ASCII: what a YAML reader
// takes unescaped.
func yamlPrintable(r rune) bool {
	return r == 0x85 || r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd && r != 0xfeff || r >= 0x10000
}
