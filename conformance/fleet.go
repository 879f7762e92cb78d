package conformance

import (
	"context"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// The whole fleet: when the fleet file names more gateways or accounts than
// the tested one, these cases use them. A device addressed through a
// gateway it is not on must not succeed; a key of one account must not act
// on another account's gateway or devices (published 5: a key that acts on
// an account it does not belong to defeats the authentication); the other
// account's own key works. With one gateway or one account they are skipped
// and the run is PARTIAL.

// peer is another account of the fleet, with a key and a gateway.
type peer struct {
	AccountID string
	Key       fleet.APIKey
	MAC       string
	Device    fleet.Device
	HasDevice bool
}

const (
	skipOneAccount = "the fleet has a single account with a key and a gateway: cross-account isolation not covered"
	skipOneGateway = "the fleet has no device on a gateway other than the tested one: cross-gateway isolation not covered"
)

// otherAccount is the first account other than the tested one that has a
// key and a gateway.
func (env *Env) otherAccount() (peer, bool) {
	for _, a := range env.Fleet.Accounts {
		if a.ID == env.Target.AccountID || len(a.APIKeys) == 0 || len(a.Gateways) == 0 {
			continue
		}
		p := peer{AccountID: a.ID, Key: a.APIKeys[0], MAC: a.Gateways[0].MAC}
		if len(a.Gateways[0].Devices) > 0 {
			p.Device, p.HasDevice = a.Gateways[0].Devices[0], true
		}
		return p, true
	}
	return peer{}, false
}

// foreignDevice is a device on a gateway other than the tested one: of the
// tested account if it has one, else of any account.
func (env *Env) foreignDevice() (fleet.Device, bool) {
	var other *fleet.Device
	for _, a := range env.Fleet.Accounts {
		for _, g := range a.Gateways {
			if g.MAC == env.Target.MAC || len(g.Devices) == 0 {
				continue
			}
			if a.ID == env.Target.AccountID {
				return g.Devices[0], true
			}
			if other == nil {
				d := g.Devices[0]
				other = &d
			}
		}
	}
	if other != nil {
		return *other, true
	}
	return fleet.Device{}, false
}

// signAs signs a call with another key of the fleet: by md5 with that key's
// secret, else with the run's signer (a sign command is given the api_key
// among the fields and signs for it).
func (env *Env) signAs(c *call, f device.Format, key fleet.APIKey) string {
	s := env.Signer
	if env.Fleet.Scheme() == auth.MD5 && len(env.Fleet.SignCommand) == 0 {
		s = client.MD5Signer{APIKey: key.Key, Secret: key.Secret}
	}
	c.set(device.FieldAPIKey, key.Key)
	var fields []client.Field
	for _, fl := range c.request(f).Fields {
		if fl.Key != device.FieldSign {
			fields = append(fields, fl)
		}
	}
	sign, err := s.Sign(context.Background(), fields)
	if err != nil {
		return "signing with the other account's key: " + err.Error()
	}
	c.set(device.FieldSign, sign)
	c.keepSign = true
	return ""
}

func fleetCases() []Case {
	var cs []Case
	add := func(c Case) {
		c.NoSim, c.WholeFleet = true, true
		c.Tags = append(c.Tags, "fleet")
		cs = append(cs, c)
	}
	for _, op := range []device.Operation{device.SendCommand, device.UpdateName} {
		op := op
		add(Case{ID: "fleet." + op.Name() + ".device-on-another-gateway", Op: op, Section: "2.2", Contract: "3",
			Title: "a " + op.Name() + " request through the tested gateway to a device of another gateway",
			Build: func(e *Env, f device.Format, id string) (call, string) {
				d, ok := e.foreignDevice()
				if !ok {
					return call{}, skipOneGateway
				}
				c := e.base(op, d.SN, d.Type)
				c.sn, c.typ = "", "" // nothing of the tested gateway to put back
				return c, ""
			},
			Want: expect{must: true, status: 404, codes: []string{device.CodeDeviceNotFound}, field: device.FieldSN}})
	}
	for _, op := range device.Operations {
		op := op
		// The other account's key, claiming the tested account and gateway.
		add(Case{ID: "fleet." + op.Name() + ".other-key-on-this-account", Op: op, Section: "5", Contract: "1",
			Title: "a " + op.Name() + " request signed with another account's key for the tested account and gateway",
			Build: func(e *Env, f device.Format, id string) (call, string) {
				p, ok := e.otherAccount()
				if !ok {
					return call{}, skipOneAccount
				}
				c, skip := onOp(op, nil)(e, f, id)
				if skip != "" {
					return c, skip
				}
				return c, e.signAs(&c, f, p.Key)
			},
			Want: expect{must: true, status: 403, codes: []string{device.CodeAccountMismatch}, field: device.FieldAccount}})
		// The other account's key, for its own account, on the tested
		// (not its) gateway and device.
		add(Case{ID: "fleet." + op.Name() + ".other-key-on-this-gateway", Op: op, Section: "5", Contract: "3",
			Title: "a " + op.Name() + " request by another account, with its own key and id, to the tested gateway",
			Build: func(e *Env, f device.Format, id string) (call, string) {
				p, ok := e.otherAccount()
				if !ok {
					return call{}, skipOneAccount
				}
				c, skip := onOp(op, nil)(e, f, id)
				if skip != "" {
					return c, skip
				}
				c.set(device.FieldAccount, p.AccountID)
				return c, e.signAs(&c, f, p.Key)
			},
			Want: expect{must: true, status: 404, codes: []string{device.CodeGatewayNotFound}, field: device.FieldMAC}})
		// The tested key, for its own account, on the other account's gateway.
		add(Case{ID: "fleet." + op.Name() + ".this-key-on-other-gateway", Op: op, Section: "5", Contract: "3",
			Title: "a " + op.Name() + " request with the tested key and account to another account's gateway",
			Build: func(e *Env, f device.Format, id string) (call, string) {
				p, ok := e.otherAccount()
				if !ok {
					return call{}, skipOneAccount
				}
				if op != device.SendMessage && !p.HasDevice {
					return call{}, "the other account's gateway has no device: not covered"
				}
				c := e.base(op, p.Device.SN, p.Device.Type)
				c.set(device.FieldMAC, p.MAC)
				c.sn, c.typ = "", ""
				return c, ""
			},
			Want: expect{must: true, status: 404, codes: []string{device.CodeGatewayNotFound}, field: device.FieldMAC}})
		// The tested key naming the other account outright.
		add(Case{ID: "fleet." + op.Name() + ".this-key-on-other-account", Op: op, Section: "5", Contract: "1",
			Title: "a " + op.Name() + " request with the tested key to another account's gateway and id",
			Build: func(e *Env, f device.Format, id string) (call, string) {
				p, ok := e.otherAccount()
				if !ok {
					return call{}, skipOneAccount
				}
				if op != device.SendMessage && !p.HasDevice {
					return call{}, "the other account's gateway has no device: not covered"
				}
				c := e.base(op, p.Device.SN, p.Device.Type)
				c.set(device.FieldMAC, p.MAC)
				c.set(device.FieldAccount, p.AccountID)
				c.sn, c.typ = "", ""
				return c, ""
			},
			Want: expect{must: true, status: 403, codes: []string{device.CodeAccountMismatch}, field: device.FieldAccount}})
	}
	// The other account's own key works on its own gateway and device.
	own := func(op device.Operation) Case {
		return Case{ID: "fleet." + op.Name() + ".other-account-own-key", Op: op, Section: "5", Contract: "1",
			Title: "a " + op.Name() + " request by another account with its own key on its own gateway",
			Want:  expect{ok: true, status: 200},
			Build: func(e *Env, f device.Format, id string) (call, string) {
				p, ok := e.otherAccount()
				if !ok {
					return call{}, skipOneAccount
				}
				if op != device.SendMessage && (!p.HasDevice || p.Device.Name == "") {
					return call{}, "the other account's gateway has no named device: not covered"
				}
				c := e.base(op, p.Device.SN, p.Device.Type)
				c.set(device.FieldMAC, p.MAC)
				c.set(device.FieldAccount, p.AccountID)
				if op == device.UpdateName {
					c.set(device.FieldName, p.Device.Name) // its own name: nothing to put back
				}
				c.sn, c.typ = "", ""
				return c, e.signAs(&c, f, p.Key)
			}}
	}
	add(own(device.SendMessage))
	add(own(device.UpdateName))
	return cs
}
