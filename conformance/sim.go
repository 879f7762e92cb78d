package conformance

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/oracle"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// declareSim adds the simulator-only state check of a case: after an
// accepted request the admin API shows what was sent; after a rejected one
// nothing changed. They need gwsim's admin API, so they carry label sim.
func (env *Env) declareSim(c Case, f device.Format, id string) {
	m := c.meta(id+".sim", check.Should, f, capital(c.Title)+": the simulator's state follows", "", "sim")
	m.Section, m.Contract = "3", "3"
	valid := c.Want.ok || c.Want.contractOK
	if valid {
		m.Assertion = capital(c.Title) + " SHOULD leave the state the admin API shows exactly as the request said (CONTRACT 3)."
	} else {
		m.Assertion = capital(c.Title) + " SHOULD be rejected and change nothing the admin API shows (CONTRACT 3)."
	}
	env.it(m, func(ctx ginkgo.SpecContext) {
		if why := env.adminSkip(); why != "" {
			ginkgo.Skip(why)
		}
		req := env.buildCase(c, f)
		before := env.snapshot(ctx, req)
		sent, r := env.sendCaseCall(ctx, c, f)
		after := env.snapshot(ctx, req)
		if !valid {
			gomega.Expect(accepted(r)).To(gomega.BeFalse(), "an invalid request was accepted: %s", describe(r))
			gomega.Expect(after).To(gomega.Equal(before), "a rejected request changed the state")
			return
		}
		gomega.Expect(accepted(r)).To(gomega.BeTrue(), "a valid request was not accepted: %s", describe(r))
		expectApplied(sent, before, after)
	})
}

// state is what the admin API shows about the devices and gateway a call
// concerns.
type state struct {
	Device   *deviceState
	Messages int
	Last     map[string]any
}

func (env *Env) snapshot(ctx context.Context, c call) state {
	ginkgo.GinkgoHelper()
	var s state
	if c.sn != "" {
		var d deviceState
		if err := env.adminGet(ctx, fmt.Sprintf("/_sim/gateways/%s/devices/%s", env.Target.MAC, c.sn), &d); err != nil {
			ginkgo.Fail("reading the device from the admin API: " + err.Error())
		}
		s.Device = &d
	}
	if c.op != device.SendMessage {
		// The message log only changes by send message; reading it (up to
		// a thousand entries) for every command would cost more than the
		// rest of the check.
		return s
	}
	// Only the newest message, and the count of all ever received from
	// X-Total-Count: the log is a ring of up to a thousand entries, too
	// much to read twice a check.
	var msgs []map[string]any
	h, err := env.adminGetHeader(ctx, "/_sim/gateways/"+env.Target.MAC+"/messages?limit=1", &msgs)
	if err != nil {
		ginkgo.Fail("reading the messages from the admin API: " + err.Error())
	}
	total, err := strconv.Atoi(h.Get("X-Total-Count"))
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("the admin API gave no count of messages (X-Total-Count %q)", h.Get("X-Total-Count")))
	}
	s.Messages = total
	if len(msgs) > 0 {
		s.Last = msgs[len(msgs)-1]
	}
	return s
}

// expectApplied checks that an accepted call did what it said.
func expectApplied(c call, before, after state) {
	ginkgo.GinkgoHelper()
	switch c.op {
	case device.SendCommand:
		t, _ := device.LookupType(c.get(device.FieldType))
		want := map[string]any{}
		for k, v := range before.Device.State {
			want[k] = v
		}
		// The expected state is written here from what was sent, not by
		// the simulator's own parsing or apply code: a bug in the shared
		// domain code cannot hide itself.
		for i := range t.Fields {
			fd := &t.Fields[i]
			for _, kv := range c.fields {
				if kv.name == fd.Name && kv.wire == "" {
					v, ok := canonical(fd, kv.value)
					gomega.Expect(ok).To(gomega.BeTrue(), "the check sent %q for %s, which has no canonical form", kv.value, fd.Name)
					want[fd.Name] = v
				}
			}
		}
		gomega.Expect(normalize(after.Device.State)).To(gomega.Equal(normalize(want)), "device state after the command")
		gomega.Expect(after.Device.Name).To(gomega.Equal(before.Device.Name), "the command changed the name")
	case device.SendMessage:
		gomega.Expect(after.Messages).To(gomega.Equal(before.Messages+1), "messages received (X-Total-Count)")
		gomega.Expect(after.Last).NotTo(gomega.BeNil(), "no message recorded")
		gomega.Expect(after.Last["message_type"]).To(gomega.Equal(c.get(device.FieldMessageType)))
		gomega.Expect(after.Last["message_value"]).To(gomega.Equal(c.get(device.FieldMessageValue)))
	case device.UpdateName:
		gomega.Expect(after.Device.Name).To(gomega.Equal(strings.TrimSpace(c.get(device.FieldName))), "name after update_name")
		gomega.Expect(after.Device.State).To(gomega.Equal(before.Device.State), "update_name changed the state")
	}
}

// canonical is the state a valid value must leave, from the harness's own
// rule table (package oracle), never package device's parsing: an
// enumerated value in the case of the published table, a number in its
// shortest decimal form, text as stored.
func canonical(f *device.Field, v string) (string, bool) {
	c, ok := oracle.Canonical(f.Name, oracle.Str(v))
	if !ok {
		return "", false
	}
	switch x := c.(type) {
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case string:
		return x, true
	}
	return "", false
}

// normalize writes every value as text so that 40, 40.0 and "40" compare
// equal across JSON decoding.
func normalize(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		case int64:
			out[k] = strconv.FormatInt(x, 10)
		default:
			out[k] = fmt.Sprint(x)
		}
	}
	return out
}

// putBack arranges for a device a call may change to be put back when the
// run ends, failed or not: its state and name as the admin API showed them
// before the run first changed it, or else as the fleet file gives them.
// Each device is read once and put back once, not around every check: the
// checks never depend on a device's state before them (the simulator
// checks read it), and a read and a restoring command around each of
// some 1,500 checks would double the requests of a run.
func (env *Env) putBack(ctx context.Context, c call) {
	if env.DryRun || c.sn == "" || c.op == device.SendMessage {
		return
	}
	d, ok := env.Target.Devices[c.typ]
	if !ok || !strings.EqualFold(d.SN, c.sn) {
		return
	}
	env.touchMu.Lock()
	defer env.touchMu.Unlock()
	if _, seen := env.touched[d.SN]; seen {
		return
	}
	saved := &touched{dev: d, name: d.Name, state: d.State}
	if env.Admin != "" {
		var cur deviceState
		if err := env.adminGet(ctx, fmt.Sprintf("/_sim/gateways/%s/devices/%s", env.Target.MAC, d.SN), &cur); err == nil {
			saved.name, saved.state = cur.Name, cur.State
		}
	}
	if env.touched == nil {
		env.touched = map[string]*touched{}
	}
	env.touched[d.SN] = saved
}

// touched is a device as it was before the run first changed it.
type touched struct {
	dev   fleet.Device
	name  string
	state map[string]any
}

// putBackAll puts every device the run changed back as it was: its name,
// and its whole state when it is known. It runs after the last check
// (AfterSuite, also when the run was interrupted or aborted), records
// nothing in the reports and counts for no check.
func (env *Env) putBackAll(ctx context.Context) {
	env.touchMu.Lock()
	defer env.touchMu.Unlock()
	defer func() { env.touched = nil }()
	if env.silent.Load() >= maxSilent {
		return // the target stopped answering: do not wait on it once more per device
	}
	put := func(r client.Request) bool {
		_, _, err := env.Client.Do(ctx, r)
		return err == nil
	}
	// Each device on its own, several at once: against a slow target one
	// after another would add a round trip per device to every run.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, t := range env.touched {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			d := t.dev
			if t.name != "" {
				r := env.base(device.UpdateName, d.SN, d.Type)
				r.set(device.FieldName, t.name)
				if !put(r.request(device.JSON)) {
					return
				}
			}
			ty, _ := device.LookupType(d.Type)
			if len(t.state) < len(ty.Fields) {
				return // the fleet does not say the whole state; nothing to put back
			}
			r := env.base(device.SendCommand, d.SN, d.Type)
			for _, fd := range ty.Fields {
				r.set(fd.Name, normalize(map[string]any{"v": t.state[fd.Name]})["v"])
			}
			put(r.request(device.JSON))
		}()
	}
	wg.Wait()
}
