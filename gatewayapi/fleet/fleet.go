// Package fleet reads, checks and writes fleet files (CONTRACT section 5):
// the accounts, keys, gateways and devices that the simulator simulates and
// that the harness uses to reach a target.
package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/fixtures"
	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

// Fleet is a whole fleet file.
type Fleet struct {
	Sign string `yaml:"sign,omitempty" json:"sign,omitempty"`
	// SignCommand is for the harness only: a command that reads the control
	// fields as JSON on stdin and writes the sign on stdout.
	SignCommand     []string  `yaml:"sign_command,omitempty" json:"sign_command,omitempty"`
	TimestampTZ     string    `yaml:"timestamp_tz,omitempty" json:"timestamp_tz,omitempty"`
	TimestampWindow *Duration `yaml:"timestamp_window,omitempty" json:"timestamp_window,omitempty"`
	Accounts        []Account `yaml:"accounts" json:"accounts"`
}

// Account is one myservice_id with its keys and gateways.
type Account struct {
	ID       string    `yaml:"myservice_id" json:"myservice_id"`
	APIKeys  []APIKey  `yaml:"api_keys,omitempty" json:"api_keys,omitempty"`
	Gateways []Gateway `yaml:"gateways,omitempty" json:"gateways,omitempty"`
}

// APIKey is a key and the secret it signs with.
type APIKey struct {
	Key    string `yaml:"api_key" json:"api_key"`
	Secret string `yaml:"secret" json:"secret"`
}

// Gateway is one gateway by hardware address.
type Gateway struct {
	MAC     string   `yaml:"mac" json:"mac"`
	Devices []Device `yaml:"devices,omitempty" json:"devices,omitempty"`
}

// Device is one device on a gateway.
type Device struct {
	SN    string         `yaml:"sn" json:"sn"`
	Type  string         `yaml:"type" json:"type"`
	Name  string         `yaml:"name,omitempty" json:"name,omitempty"`
	State map[string]any `yaml:"state,omitempty" json:"state,omitempty"`
}

// Duration is a time.Duration written as "300s" or as whole seconds.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	s := strings.TrimSpace(n.Value)
	if secs, err := strconv.Atoi(s); err == nil {
		d.Duration = time.Duration(secs) * time.Second
	} else if d.Duration, err = time.ParseDuration(s); err != nil {
		return fmt.Errorf("line %d: timestamp_window: %q is not a duration such as 300s (0: no window)", n.Line, n.Value)
	}
	if d.Duration < 0 {
		return fmt.Errorf("line %d: timestamp_window: %q must not be negative", n.Line, n.Value)
	}
	return nil
}

func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// Demo is the built-in demo fleet.
func Demo() *Fleet {
	f, err := Parse(fixtures.DemoFleet)
	if err != nil {
		panic("fleet: built-in demo fleet is invalid: " + err.Error())
	}
	return f
}

// MaxFileSize bounds a fleet file (a generated fleet of millions of
// devices fits).
const MaxFileSize = 1 << 30

// Load reads and checks a fleet file: a regular file of at most
// MaxFileSize bytes (a FIFO or a device is refused at once).
func Load(path string) (*Fleet, error) {
	b, err := safefile.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse reads and checks a fleet from YAML (or JSON) bytes. Unknown keys are
// errors, so that a misspelt key is not silently ignored.
func Parse(b []byte) (*Fleet, error) {
	// A file that is JSON gets JSON's errors, with line and column: YAML
	// would accept some broken JSON (a trailing comma) and name the rest
	// in YAML's words.
	if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		if err := jsonSyntax(b); err != nil {
			return nil, err
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		// yaml lists several errors on several lines; programs print the
		// reason on one line.
		return nil, errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, errors.New("fleet file is empty")
	}
	if err := checkShape(&doc); err != nil {
		return nil, err
	}
	var f Fleet
	if err := doc.Decode(&f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, errors.New(strings.Join(te.Errors, "; "))
		}
		return nil, errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if err := f.Check(); err != nil {
		return nil, withLine(&doc, err)
	}
	return &f, nil
}

// Marshal writes the fleet as YAML, in WriteYAML's form.
func (f *Fleet) Marshal() ([]byte, error) {
	var b bytes.Buffer
	err := f.WriteYAML(&b)
	return b.Bytes(), err
}

// Scheme is the fleet's sign scheme.
func (f *Fleet) Scheme() auth.Scheme {
	s, _ := auth.ParseScheme(f.Sign)
	return s
}

// Window is the timestamp window; zero disables the check.
func (f *Fleet) Window() time.Duration {
	if f.TimestampWindow == nil {
		return auth.DefaultWindow
	}
	return f.TimestampWindow.Duration
}

// Location is the zone timestamps are read in.
func (f *Fleet) Location() *time.Location {
	if f.TimestampTZ == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(f.TimestampTZ)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Keys lists every api_key with its secret and account.
func (f *Fleet) Keys() map[string]auth.Key {
	keys := map[string]auth.Key{}
	for _, a := range f.Accounts {
		for _, k := range a.APIKeys {
			keys[k.Key] = auth.Key{Secret: k.Secret, AccountID: strings.ToLower(a.ID)}
		}
	}
	return keys
}

// Secret is the secret of an api_key of the fleet.
func (f *Fleet) Secret(apiKey string) (string, bool) {
	for _, a := range f.Accounts {
		for _, k := range a.APIKeys {
			if k.Key == apiKey {
				return k.Secret, true
			}
		}
	}
	return "", false
}

// KeyOf is the first api_key of an account (myservice_id, lower-case).
func (f *Fleet) KeyOf(accountID string) (string, bool) {
	for _, a := range f.Accounts {
		if a.ID == accountID && len(a.APIKeys) > 0 {
			return a.APIKeys[0].Key, true
		}
	}
	return "", false
}

// KeyWithPrefix is the api_key that starts with prefix (a key masked in a
// report): the account's first such key, else any account's.
func (f *Fleet) KeyWithPrefix(accountID, prefix string) (string, bool) {
	found := ""
	for _, a := range f.Accounts {
		for _, k := range a.APIKeys {
			if !strings.HasPrefix(k.Key, prefix) {
				continue
			}
			if a.ID == accountID {
				return k.Key, true
			}
			if found == "" {
				found = k.Key
			}
		}
	}
	return found, found != ""
}

// Authenticator is the fleet's authentication settings.
func (f *Fleet) Authenticator() *auth.Authenticator {
	return &auth.Authenticator{Keys: f.Keys(), Scheme: f.Scheme(), Window: f.Window(), Location: f.Location()}
}

// Check validates every identifier, type, name and state, and that ids and
// keys are unique. Hex identifiers are stored lower-case.
func (f *Fleet) Check() error {
	if _, err := auth.ParseScheme(f.Sign); err != nil {
		return fmt.Errorf("sign: %q is not a sign scheme: md5, format or off", f.Sign)
	}
	if f.TimestampTZ != "" {
		if _, err := time.LoadLocation(f.TimestampTZ); err != nil {
			return fmt.Errorf("timestamp_tz: %q is not an IANA zone name", f.TimestampTZ)
		}
	}
	if len(f.Accounts) == 0 {
		return errors.New("accounts: a fleet needs at least one account")
	}
	accounts := map[string]bool{}
	keys := map[string]bool{}
	for ai := range f.Accounts {
		a := &f.Accounts[ai]
		where := fmt.Sprintf("accounts[%d]", ai)
		if err := checkHex(&a.ID, 24); err != nil {
			return fmt.Errorf("%s.myservice_id: %w", where, err)
		}
		if accounts[a.ID] {
			return fmt.Errorf("%s.myservice_id: %s appears twice", where, a.ID)
		}
		accounts[a.ID] = true
		for ki, k := range a.APIKeys {
			if k.Key == "" || len(k.Key) > device.MaxAPIKeyLen || strings.TrimSpace(k.Key) != k.Key {
				return fmt.Errorf("%s.api_keys[%d].api_key: must be 1 to %d characters without surrounding spaces", where, ki, device.MaxAPIKeyLen)
			}
			if keys[k.Key] {
				return fmt.Errorf("%s.api_keys[%d].api_key: %q belongs to two accounts", where, ki, k.Key)
			}
			keys[k.Key] = true
		}
		macs := map[string]bool{}
		for gi := range a.Gateways {
			g := &a.Gateways[gi]
			gwhere := fmt.Sprintf("%s.gateways[%d]", where, gi)
			if err := checkHex(&g.MAC, 12); err != nil {
				return fmt.Errorf("%s.mac: %w", gwhere, err)
			}
			if macs[g.MAC] {
				return fmt.Errorf("%s.mac: %s appears twice", gwhere, g.MAC)
			}
			macs[g.MAC] = true
			sns := make(map[string]bool, len(g.Devices))
			for di := range g.Devices {
				d := &g.Devices[di]
				dwhere := fmt.Sprintf("%s.devices[%d]", gwhere, di)
				if err := checkHex(&d.SN, 32); err != nil {
					return fmt.Errorf("%s.sn: %w", dwhere, err)
				}
				if sns[d.SN] {
					return fmt.Errorf("%s.sn: %s appears twice on the gateway", dwhere, d.SN)
				}
				sns[d.SN] = true
				t, ok := device.LookupType(d.Type)
				if !ok {
					return fmt.Errorf("%s.type: %q is not one of %s%s", dwhere, d.Type, strings.Join(device.TypeNames(), ", "), meantType(d.Type))
				}
				if d.Name != "" {
					d.Name = strings.TrimSpace(d.Name)
					if err := device.CheckName(d.Name); err != nil {
						return fmt.Errorf("%s.name: %v", dwhere, err)
					}
				}
				if _, err := t.ParseState(d.State); err != nil {
					return fmt.Errorf("%s.state: %v", dwhere, err)
				}
			}
		}
	}
	return nil
}

func checkHex(s *string, n int) error {
	v := strings.ToLower(strings.TrimSpace(*s))
	if len(v) != n {
		return fmt.Errorf("%q must be %d hexadecimal characters", *s, n)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("%q must be %d hexadecimal characters", *s, n)
		}
	}
	*s = v
	return nil
}

// Target is what the harness needs from a fleet: the first account with an
// api key, its first gateway, and the first device of each type on it.
type Target struct {
	AccountID string
	Key       APIKey
	MAC       string
	// Devices maps a type name to the first device of that type.
	Devices map[string]Device
	// OtherAccount is another account's id (with a gateway), if the fleet has one.
	OtherAccount string
}

// Target picks the account, key, gateway and devices the harness tests with.
func (f *Fleet) Target() (*Target, error) {
	for _, a := range f.Accounts {
		if len(a.APIKeys) == 0 {
			continue
		}
		if len(a.Gateways) == 0 {
			return nil, fmt.Errorf("account %s has an api key but no gateway", a.ID)
		}
		t := &Target{AccountID: a.ID, Key: a.APIKeys[0], MAC: a.Gateways[0].MAC, Devices: map[string]Device{}}
		for _, d := range a.Gateways[0].Devices {
			if _, ok := t.Devices[d.Type]; !ok {
				t.Devices[d.Type] = d
			}
		}
		for _, o := range f.Accounts {
			if o.ID != a.ID {
				t.OtherAccount = o.ID
				break
			}
		}
		return t, nil
	}
	return nil, errors.New("no account in the fleet has an api key")
}

// TestedGateway is the gateway Target picks, with all its devices.
func (f *Fleet) TestedGateway() (*Target, *Gateway, error) {
	t, err := f.Target()
	if err != nil {
		return nil, nil, err
	}
	for ai := range f.Accounts {
		a := &f.Accounts[ai]
		for gi := range a.Gateways {
			if a.ID == t.AccountID && a.Gateways[gi].MAC == t.MAC {
				return t, &a.Gateways[gi], nil
			}
		}
	}
	return nil, nil, errors.New("the tested gateway is not in the fleet")
}

// DeviceCount is the number of devices in the fleet.
func (f *Fleet) DeviceCount() int {
	n := 0
	for _, a := range f.Accounts {
		for _, g := range a.Gateways {
			n += len(g.Devices)
		}
	}
	return n
}

// jsonSyntax checks that b is one JSON value, and says where it is not.
func jsonSyntax(b []byte) error {
	var v any
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		line, col := lineColumn(b, se.Offset)
		return fmt.Errorf("line %d, column %d: %s (the file is read as JSON)", line, col, se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineColumn(b, int64(len(b)))
		return fmt.Errorf("line %d, column %d: the JSON ends before its last value does", line, col)
	}
	return nil // a type mismatch: the checks below name the key
}

// lineColumn is the 1-based line and column (in characters) of the byte
// just before offset, where a JSON syntax error lies.
func lineColumn(b []byte, offset int64) (int, int) {
	if offset > int64(len(b)) {
		offset = int64(len(b))
	}
	if offset > 0 {
		offset--
	}
	before := b[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}

// meantType is " (did you mean T?)" for a type name that is a device
// type's but for letter case, spaces or a letter or two, else "".
func meantType(name string) string {
	squash := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), "")) }
	best, bestD := "", 3
	for _, t := range device.TypeNames() {
		if d := distance(squash(name), squash(t)); d < bestD {
			best, bestD = t, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}
