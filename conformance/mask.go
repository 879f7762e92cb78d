package conformance

import (
	"net/url"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/client"
)

// secretsMask is the reports' mask by value (report.WriteOptions.Mask):
// the fleet's api_keys and secrets, every sign this process computed, and
// the target's user information (a password in --target) are replaced
// (the keys kept whole with --report-credentials)
// wherever a string of the reports holds them, whatever a target echoed.
// The field patterns (sign, api_key) stay as a second net.
func secretsMask(env *Env) func(string) string {
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
	m.Add("sign", client.ComputedSigns()...)
	var drop []string
	if env != nil {
		for _, base := range strings.Split(env.BaseURL, ",") {
			if u, err := url.Parse(strings.TrimSpace(base)); err == nil && u.User != nil {
				drop = append(drop, u.User.String()+"@")
				if p, ok := u.User.Password(); ok {
					m.Add("secret", p, url.QueryEscape(p), url.PathEscape(p))
				}
			}
		}
	}
	return func(s string) string {
		for _, d := range drop {
			s = strings.ReplaceAll(s, d, "")
		}
		return m.Mask(s)
	}
}

// maxMaskedKeys bounds the fleet keys the reports mask by value.
const maxMaskedKeys = 10000
