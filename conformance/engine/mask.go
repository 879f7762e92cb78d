package engine

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
)

// secretsMask is the reports' mask by value (report.WriteOptions.Mask):
// the fleet's api_keys and secrets, every sign this process computed, and
// the target's user information (a password in --target) are replaced
// (the keys kept whole with --report-credentials)
// wherever a string of the reports holds them, whatever a target echoed.
// The field patterns (sign, api_key) stay as a second net.
func secretsMask(env *Env) func(string) string {
	m, drop := fleetMask(env)
	m.Add("sign", client.ComputedSigns()...)
	return func(s string) string {
		for _, d := range drop {
			s = strings.ReplaceAll(s, d, "")
		}
		return m.Mask(s)
	}
}

// ConsoleMask is the mask by value of what the console shows while the
// run goes on (Ginkgo's own report, with -v): the fleet's api_keys and
// secrets and the target's user information as secretsMask masks them,
// and every sign the process has computed by the time a line is written.
func ConsoleMask(env *Env) func(string) string {
	m, drop := fleetMask(env)
	m.Mask("") // its replacer built now, read by every line after
	return func(s string) string {
		for _, d := range drop {
			s = strings.ReplaceAll(s, d, "")
		}
		return client.MaskComputedSigns(m.Mask(s))
	}
}

// fleetMask is the masker of the fleet's keys and secrets and the
// target's password, and the user information to drop from URLs.
func fleetMask(env *Env) (*client.ValueMasker, []string) {
	m := &client.ValueMasker{}
	if env != nil && env.Fleet != nil {
		n := 0
		for k, v := range env.Fleet.Authenticator().Keys {
			if n++; n > maxMaskedKeys {
				break
			}
			if !env.ReportCredentials { // --report-credentials shows the keys whole
				m.Add("key", k)
			}
			m.Add("secret", v.Secret)
		}
	}
	var drop []string
	if env != nil && env.Client != nil {
		if u := env.Client.Base().URL(); u.User != nil {
			drop = append(drop, u.User.String()+"@")
			if p, ok := u.User.Password(); ok {
				m.Add("secret", p, url.QueryEscape(p), url.PathEscape(p))
			}
		}
	}
	return m, drop
}

// maxMaskedKeys bounds the fleet keys the reports mask by value.
const maxMaskedKeys = 10000

// maskWorkerReport masks every string of a worker's Ginkgo report by
// mask, its report entries' values included: a wrapped value is rendered
// to its JSON and text forms, those are masked, and the value is read
// back from the masked JSON (Ginkgo encodes an entry from its value).
func maskWorkerReport(r *types.Report, mask func(string) string) {
	for i := range r.SpecReports {
		for j := range r.SpecReports[i].ReportEntries {
			v := &r.SpecReports[i].ReportEntries[j].Value
			b, err := json.Marshal(*v)
			if err != nil {
				continue
			}
			var forms struct{ AsJSON, Representation string }
			if json.Unmarshal(b, &forms) != nil {
				continue
			}
			forms.AsJSON, forms.Representation = mask(forms.AsJSON), mask(forms.Representation)
			b, _ = json.Marshal(forms)
			var masked types.ReportEntryValue
			if masked.UnmarshalJSON(b) == nil {
				*v = masked
			} else {
				*v = types.WrapEntryValue("(withheld: it could not be masked)")
			}
		}
	}
	report.MaskStrings(r, mask)
}
