package diff

import (
	"context"
	"fmt"

	"github.com/gwdmi/gwtools/conformance/explore"
)

// unknownSN is a serial number no fleet should have: a command to it
// changes nothing.
const unknownSN = "fffffffffffffffffffffffffffffff0"

// Preflight checks that a side can be compared at all, as gwconform run's
// pre-flight does, with requests the rule table says change nothing (so
// that it is safe in read-only mode too): the target answers; not every
// operation is 404 at its base URL; every account's credentials are taken
// (a command to an unknown device of the account's gateway is answered
// with anything but 401 or 403). The error names the cause in the user's
// set-up.
func Preflight(ctx context.Context, name string, s Side, rules explore.Rules) error {
	if rules == nil {
		rules = explore.OracleRules()
	}
	w, t := s.World, s.Target
	a := w.Accounts[0]
	g := a.Gateways[0]
	typ := g.Devices[0].Type
	field := rules.Simplest(typ, rules.Fields(typ)[0])
	notFound := 0
	for _, kind := range []explore.Kind{explore.Command, explore.Message, explore.Rename} {
		op := explore.Op{Kind: kind, Format: "json", Account: a.ID, Key: a.Key, MAC: g.MAC, SN: g.Devices[0].SN, BadSign: true}
		switch kind {
		case explore.Command:
			op.Type, op.Fields = typ, []explore.KV{field}
		case explore.Message:
			op.SN, op.Fields = "", []explore.KV{{Key: "message_type", Value: "message"}, {Key: "message_value", Value: "a=1"}}
		case explore.Rename:
			op.Fields = []explore.KV{{Key: "name", Value: "x"}}
		}
		r := t.Do(ctx, op)
		if r.Err != "" {
			return fmt.Errorf("%s (%s): no answer: %s", name, explore.RedactURLs(t.BaseURL), r.Err)
		}
		if r.Answer.Status == 404 && r.Answer.Code != "gateway_not_found" && r.Answer.Code != "device_not_found" {
			notFound++
		}
	}
	if notFound == 3 {
		return fmt.Errorf("%s (%s): every operation answers 404 at this base URL: is it the service's root (the paths begin with /v1)?", name, explore.RedactURLs(t.BaseURL))
	}
	for _, acct := range w.Accounts {
		gw := acct.Gateways[0]
		dtyp := gw.Devices[0].Type
		op := explore.Op{Kind: explore.Command, Format: "json", Account: acct.ID, Key: acct.Key, MAC: gw.MAC, SN: unknownSN,
			Type: dtyp, Fields: []explore.KV{rules.Simplest(dtyp, rules.Fields(dtyp)[0])}}
		r := t.Do(ctx, op)
		if r.Err == "" && (r.Answer.Status == 401 || r.Answer.Status == 403) {
			return fmt.Errorf("%s (%s): the credentials of account %s (api_key %s) are refused: %s; check the fleet file for this target",
				name, explore.RedactURLs(t.BaseURL), acct.ID, maskKey(acct.Key), r.Answer)
		}
	}
	return nil
}
