package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/internal/schedule"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// A pre-flight request: one valid request of the run, what it is about.
type preflightRequest struct {
	req  client.Request
	what string
	dev  fleet.Device
}

// preflightRequests are one valid request per operation, per format and
// per device of the tested gateway, that leave the devices as they are:
// the command sends the state the observer shows (else the fleet's, the
// rule table's example value where it gives none), the rename the device's own name.
func preflightRequests(ctx context.Context, e *Env, n int) []preflightRequest {
	devices := testedDevices(e)
	// Each device is read once, n at a time.
	shown := make([]*observer.Device, len(devices))
	if e.Observer != "" {
		jobs := make([]func(), len(devices))
		for i, d := range devices {
			jobs[i] = func() {
				if cur, err := e.Link().ReadDevice(ctx, e.Target.MAC, d.SN); err == nil {
					shown[i] = &cur
				}
			}
		}
		schedule.N(jobs, n)
	}
	var out []preflightRequest
	for _, f := range []device.Format{device.JSON, device.XML} {
		for i, d := range devices {
			t, ok := oracle.LookupType(d.Type)
			if !ok {
				continue
			}
			name, st := d.Name, d.State
			if cur := shown[i]; cur != nil {
				name, st = cur.Name, cur.State
			}
			c := e.Base(device.SendCommand, d.SN, d.Type)
			for _, fd := range t.Fields {
				v := fd.Example
				if s, ok := st[fd.Name]; ok {
					v = observer.Values(map[string]any{"v": s})["v"]
				}
				c.Set(fd.Name, v)
			}
			what := fmt.Sprintf("%s to %s %s in %s", device.SendCommand.Name(), d.Type, d.SN, f)
			out = append(out, preflightRequest{req: c.Request(f), what: what, dev: d})
			if strings.TrimSpace(name) != "" {
				c := e.Base(device.UpdateName, d.SN, d.Type)
				c.Set(device.FieldName, name)
				what := fmt.Sprintf("%s of %s %s in %s", device.UpdateName.Name(), d.Type, d.SN, f)
				out = append(out, preflightRequest{req: c.Request(f), what: what, dev: d})
			}
		}
		out = append(out, preflightRequest{req: e.Base(device.SendMessage, "", "").Request(f),
			what: fmt.Sprintf("%s to gateway %s in %s", device.SendMessage.Name(), e.Target.MAC, f)})
	}
	return out
}

// testedDevices are the devices of the tested gateway the run uses: every
// device the fleet lists on it, else the target's one of each type.
func testedDevices(e *Env) []fleet.Device {
	if e.Fleet != nil {
		if _, g, err := e.Fleet.TestedGateway(); err == nil && g.MAC == e.Target.MAC {
			return g.Devices
		}
	}
	var out []fleet.Device
	for _, t := range device.Types {
		if d, ok := e.Target.Devices[t.Name]; ok {
			out = append(out, d)
		}
	}
	return out
}

// Preflight sends the pre-flight requests (one valid request per
// operation, per format and per device of the tested gateway, and one per
// other api key of the fleet) and returns an error, one line naming the
// likely cause, only when the cause lies in the user's set-up and the run
// could judge nothing: the target does not speak HTTP or this interface,
// every operation is 404 at the base URL (a base URL ending in /v1), every
// request is refused for its credentials or the fleet's gateway (wrong
// secret, unedited template, clocks apart, a fleet the target does not
// have), a device the fleet names is unknown to the target, or any api key
// of the fleet is refused for its credentials.
//
// A valid request the target refuses for any other reason, or answers with
// something other than the success body, is a conformance failure, not a
// set-up problem: Preflight returns one line for each (refused), and the
// run goes on to judge it: that check fails at its level, and the refusal
// checks that need it as their control are inconclusive (control.go).
//
// n is how many of its requests may be in flight at once: the workers of a
// --parallel run, and at least the run's --concurrency (each request sets
// a device to what it shows, so their order does not matter; against a
// target across a network some forty requests one after another would
// cost the run three seconds before its first check). The first is sent
// alone, so that a target that cannot be reached is told after one
// request.
func Preflight(ctx context.Context, e *Env, n int) (refused []string, err error) {
	n = max(n, e.InFlight())
	reqs := preflightRequests(ctx, e, n)
	// The messages it sends are awaited like the run's own (package link).
	e.Link().CountLog(ctx)
	answers, err := sendPreflight(ctx, e, reqs, n)
	if err != nil || len(answers) == 0 {
		return nil, err
	}
	if err := setupCause(e, answers); err != nil {
		return nil, err
	}
	// Every other key of the fleet, on its own account.
	if err := preflightKeys(ctx, e); err != nil {
		return nil, err
	}
	return preflightFailures(answers), nil
}

// preflightAnswer is a pre-flight request and the target's answer to it.
type preflightAnswer struct {
	p preflightRequest
	r *client.Response
}

// sendPreflight sends the pre-flight requests and returns their answers in
// order. The first goes alone, so that a target that cannot be reached is
// told after one request; the rest n at a time once it was answered (one
// by one when it got none). A connection that does not carry HTTP, or a
// request that got no answer at all, ends the pre-flight with its cause.
func sendPreflight(ctx context.Context, e *Env, reqs []preflightRequest, n int) ([]preflightAnswer, error) {
	rs := make([]*client.Response, len(reqs))
	errs := make([]error, len(reqs))
	send := func(i int) {
		// Only answers to requests sent alone tell how far the target
		// is (far): the first, or every one when n is 1.
		if i == 0 || n == 1 {
			rs[i], _, errs[i] = e.Link().Send(ctx, reqs[i].req)
		} else {
			rs[i], _, errs[i] = e.Link().SendTogether(ctx, reqs[i].req)
		}
		if errs[i] == nil {
			e.Link().Track(reqs[i].req, rs[i])
		}
	}
	var answers []preflightAnswer
	for i, p := range reqs {
		if i == 1 && errs[0] == nil {
			// The rest n at a time; judged below in order, as if sent so.
			jobs := make([]func(), 0, len(reqs)-1)
			for j := 1; j < len(reqs); j++ {
				jobs = append(jobs, func() { send(j) })
			}
			schedule.N(jobs, n)
		} else if i == 0 || errs[0] != nil {
			send(i)
		}
		r, err := rs[i], errs[i]
		if err != nil {
			if cause := transportCause(e.Client.Base(), err); cause != "" {
				return nil, errors.New(cause)
			}
			if r == nil {
				return nil, fmt.Errorf("pre-flight: the valid %s got no answer (%v): the target cannot be judged (--skip-preflight runs the checks anyway)", p.what, err)
			}
		}
		answers = append(answers, preflightAnswer{p, r})
	}
	return answers, nil
}

// setupCause is the one-line cause, in the user's set-up, of answers that
// let the run judge nothing: the operations are not at the base URL, the
// target does not speak this interface, the fleet file is not this
// target's, or a device it names is not the target's; nil when the
// answers can be judged.
func setupCause(e *Env, answers []preflightAnswer) error {
	// 404 to every request: the operations are not where they were sought.
	all404 := true
	for _, a := range answers {
		all404 = all404 && a.r.Status == http.StatusNotFound && a.r.ErrorCode != device.CodeGatewayNotFound && a.r.ErrorCode != device.CodeDeviceNotFound
	}
	if all404 {
		return errors.New(notFoundCause(e.Client.Base(), answers[0].r))
	}
	if err := unreadableCause(e, answers); err != nil {
		return err
	}
	// Every request refused for its credentials or the fleet's gateway:
	// the fleet file is not this target's.
	allSetup := true
	for _, a := range answers {
		allSetup = allSetup && !link.Accepted(a.r) && setupRefusal(a.r.ErrorCode)
	}
	if allSetup {
		return errors.New(refusalCause(e, answers[0].p, answers[0].r))
	}
	return unknownDeviceCause(e, answers)
}

// unreadableCause names a target that speaks TLS to plain HTTP, or one
// that gave not one answer with a status: this is not the interface (a
// web server, another service). One unreadable answer among readable ones
// is the target's fault, which its check judges: nil then.
func unreadableCause(e *Env, answers []preflightAnswer) error {
	var unreadable *preflightAnswer
	for i, a := range answers {
		if strings.Contains(string(a.r.Body), "HTTP request to an HTTPS server") {
			return fmt.Errorf("the target speaks TLS: give --target %s", withScheme(e.Client.Base(), "https"))
		}
		if a.r.StatusField == "" && unreadable == nil {
			unreadable = &answers[i]
		}
	}
	readable := false
	for _, a := range answers {
		readable = readable || a.r.StatusField != ""
	}
	if readable {
		return nil
	}
	r := unreadable.r
	mt, _, _ := mime.ParseMediaType(r.ContentType)
	if mt == "" {
		mt = "no Content-Type"
	}
	why := r.ParseError
	if why == "" {
		why = "no status field"
	}
	return fmt.Errorf("the target does not speak this interface: POST %s answered HTTP %d (%s: %s), not JSON or XML with a status; nothing checked (--skip-preflight runs the checks anyway)",
		unreadable.p.req.Path, r.Status, mt, why)
}

// unknownDeviceCause names a device the target does not have, or has as
// another type: every request about it refused so. The fleet's devices are
// taken in the order of their first request.
func unknownDeviceCause(e *Env, answers []preflightAnswer) error {
	bySN := map[string][]preflightAnswer{}
	var sns []string
	for _, a := range answers {
		if a.p.dev.SN == "" {
			continue
		}
		if _, ok := bySN[a.p.dev.SN]; !ok {
			sns = append(sns, a.p.dev.SN)
		}
		bySN[a.p.dev.SN] = append(bySN[a.p.dev.SN], a)
	}
	for _, sn := range sns {
		all := true
		for _, a := range bySN[sn] {
			all = all && (a.r.ErrorCode == device.CodeDeviceNotFound || a.r.ErrorCode == device.CodeTypeMismatch) && !link.Accepted(a.r)
		}
		if all {
			a := bySN[sn][0]
			return errors.New(refusalCause(e, a.p, a.r))
		}
	}
	return nil
}

// preflightFailures are the lines for the valid requests the target
// refused, or answered with something other than the success body, for a
// reason that is not the set-up's: conformance failures the run goes on
// to judge.
func preflightFailures(answers []preflightAnswer) []string {
	var refused []string
	for _, a := range answers {
		r := a.r
		// A target that sheds load is judged check by check (and the run
		// stops itself if it stops answering).
		if link.Accepted(r) || r.Status == http.StatusTooManyRequests || r.Status == http.StatusRequestTimeout {
			continue
		}
		if r.Status >= 500 && !link.RefusesInput(r.ErrorCode) {
			// A server error to a valid request is the first thing a
			// vendor must read, not a line in the tail of the failures.
			refused = append(refused, fmt.Sprintf("pre-flight: the valid %s was answered with a server error (%s): the target fails on a valid request; the run goes on, that check fails unless the target answers it then, and the refusal checks that need it as their control are inconclusive",
				a.p.what, link.Describe(r)))
			continue
		}
		refused = append(refused, fmt.Sprintf("pre-flight: the valid %s was %s: a conformance failure, not a set-up problem: the run goes on, that check fails, and the refusal checks that need it as their control are inconclusive",
			a.p.what, refusedWords(r)))
	}
	return refused
}

// refusedWords says how a valid request was answered: refused with its
// error, or answered with something other than the success body.
func refusedWords(r *client.Response) string {
	if r.Status/100 == 2 && r.StatusField != "error" {
		return "answered " + link.Describe(r) + " instead of status success"
	}
	return "refused (" + link.Describe(r) + ")"
}

// setupRefusal says whether an error code blames the request's
// credentials or the fleet's account and gateway rather than the request:
// when every request gets one, the fleet file is not this target's.
func setupRefusal(code string) bool {
	switch code {
	case device.CodeBadSignature, device.CodeUnknownAPIKey, device.CodeStaleTimestamp, device.CodeAccountMismatch, device.CodeGatewayNotFound:
		return true
	}
	return false
}

// preflightKeys sends one valid message with every api key of the fleet
// other than the tested one, to its account's first gateway: a key the
// target refuses for its credentials (a wrong secret on the second
// account) is the fleet file's fault, and would otherwise fail the checks
// that use it, blaming the service.
func preflightKeys(ctx context.Context, e *Env) error {
	if e.Fleet == nil {
		return nil
	}
	for _, a := range e.Fleet.Accounts {
		if len(a.Gateways) == 0 {
			continue
		}
		for _, k := range a.APIKeys {
			if a.ID == e.Target.AccountID && k.Key == e.Target.Key.Key {
				continue
			}
			c := e.Base(device.SendMessage, "", "")
			c.Set(device.FieldAccount, a.ID)
			c.Set(device.FieldMAC, a.Gateways[0].MAC)
			if why := e.SignAs(&c, device.JSON, k); why != "" {
				return fmt.Errorf("pre-flight: %s", why)
			}
			r, _, err := e.Link().Send(ctx, c.Request(device.JSON))
			if err != nil || link.Accepted(r) || !setupRefusal(r.ErrorCode) {
				continue // the checks that use it judge the rest
			}
			key := maskKey(k.Key)
			head := fmt.Sprintf("pre-flight: the valid %s to gateway %s of account %s with api_key %s was refused (%s): ",
				device.SendMessage.Name(), a.Gateways[0].MAC, a.ID, key, link.Describe(r))
			tail := "; nothing checked (--skip-preflight runs the checks anyway)"
			switch r.ErrorCode {
			case device.CodeBadSignature:
				return errors.New(head + "check the secret of api_key " + key + " of account " + a.ID + " in the fleet file" + tail)
			case device.CodeUnknownAPIKey:
				return errors.New(head + "the key " + key + " of account " + a.ID + " is not registered at the target" + tail)
			case device.CodeAccountMismatch:
				return errors.New(head + fmt.Sprintf("the target does not have api_key %s on account %s, as the fleet says", key, a.ID) + tail)
			case device.CodeGatewayNotFound:
				return errors.New(head + fmt.Sprintf("the target does not have gateway %s on account %s, as the fleet says", a.Gateways[0].MAC, a.ID) + tail)
			case device.CodeStaleTimestamp:
				return errors.New(head + clockCause(e, r) + tail)
			}
		}
	}
	return nil
}

// refusalCause says in one line why a valid pre-flight request was
// refused, from the error the target gave.
func refusalCause(e *Env, p preflightRequest, r *client.Response) string {
	key := maskKey(e.Target.Key.Key)
	head := fmt.Sprintf("pre-flight: the valid %s was refused (%s): ", p.what, link.Describe(r))
	tail := "; nothing checked (--skip-preflight runs the checks anyway)"
	switch r.ErrorCode {
	case device.CodeBadSignature:
		return head + "check the secret of api_key " + key + " in the fleet file (and its sign scheme)" + tail
	case device.CodeUnknownAPIKey:
		return head + "the key " + key + " is not registered at the target; is this the unedited template?" + tail
	case device.CodeStaleTimestamp:
		return head + clockCause(e, r) + tail
	case device.CodeAccountMismatch:
		return head + fmt.Sprintf("the target does not have api_key %s on account %s (the fleet's first account with a key)", key, e.Target.AccountID) + tail
	case device.CodeGatewayNotFound:
		return head + fmt.Sprintf("the target does not have gateway %s on account %s (the fleet's tested gateway)", e.Target.MAC, e.Target.AccountID) + tail
	case device.CodeDeviceNotFound:
		return head + fmt.Sprintf("the target does not have device %s (%s) on gateway %s, as the fleet says", p.dev.SN, p.dev.Type, e.Target.MAC) + tail
	case device.CodeTypeMismatch:
		return head + fmt.Sprintf("the target's device %s on gateway %s is not %s, as the fleet says", p.dev.SN, e.Target.MAC, device.A(p.dev.Type)) + tail
	}
	return head + "a refusal of any other request would prove nothing" + tail
}

// clockCause is the stale_timestamp line: how far apart the clocks are,
// from the answer's Date header when it has one.
func clockCause(e *Env, r *client.Response) string {
	now := time.Now()
	if e.Now != nil {
		now = e.Now()
	}
	if d, err := http.ParseTime(r.Header.Get("Date")); err == nil {
		diff := int64(math.Round(d.Sub(now).Seconds()))
		if diff < 0 {
			diff = -diff
		}
		if w := e.Fleet.Window(); w > 0 && time.Duration(diff)*time.Second < w/2 {
			// The clocks agree: the timestamp is read in another zone.
			zone, off := now.In(e.Fleet.Location()).Zone()
			return fmt.Sprintf("the clocks agree (the target's Date: %s), so the target reads the timestamp in another zone than the one it is written in (%s, %s, UTC%+g h): set the fleet's timestamp_tz to the target's zone (UTC unless its documentation says otherwise)",
				r.Header.Get("Date"), e.Fleet.Location(), zone, float64(off)/3600)
		}
		return fmt.Sprintf("the clocks differ by %d s (the target's Date: %s; window %s): set this machine's clock, or the fleet's timestamp_tz to the target's zone",
			diff, r.Header.Get("Date"), e.Fleet.Window())
	}
	return "the target finds this machine's time stale and sends no Date header: the clocks differ, or the fleet's timestamp_tz is not the target's"
}

// notFoundCause is the line for a target that answered 404 to every
// pre-flight request.
func notFoundCause(target client.BaseURL, r *client.Response) string {
	base, path := target.Redacted(), target.URL().Path
	if i := strings.Index(path+"/", "/v1/"); i >= 0 {
		root := strings.TrimRight(base, "/")
		root = root[:len(root)-len(path)] + path[:i]
		return fmt.Sprintf("the target does not speak this interface at %s: every operation answered HTTP 404; the operations are expected at %s/v1/services/…, and you gave …%s: give --target %s",
			base, root, path[i:], root)
	}
	mt, _, _ := mime.ParseMediaType(r.ContentType)
	if mt == "" {
		mt = "no Content-Type"
	}
	return fmt.Sprintf("the target does not speak this interface at %s: every operation answered HTTP 404 (%s); the operations are expected at %s/v1/services/…; nothing checked (--skip-preflight runs the checks anyway)",
		base, mt, strings.TrimRight(base, "/"))
}

// transportCause names a connection that does not carry HTTP as the
// target's URL says: a port that does not speak HTTP, HTTP against TLS or
// TLS against plain HTTP. Empty for anything else (a timeout, a reset).
func transportCause(target client.BaseURL, err error) string {
	base, s := target.Redacted(), err.Error()
	switch {
	case strings.Contains(s, "server gave HTTP response to HTTPS client"), strings.Contains(s, "first record does not look like a TLS handshake"):
		return fmt.Sprintf("the target speaks plain HTTP, not TLS: give --target %s", withScheme(target, "http"))
	case strings.Contains(s, "malformed HTTP") && strings.Contains(s, `\x15\x03`):
		return fmt.Sprintf("the target speaks TLS: give --target %s", withScheme(target, "https"))
	case strings.Contains(s, "malformed HTTP"):
		return fmt.Sprintf("the target %s does not speak HTTP: its answer is not an HTTP response (is it the right port?)", base)
	}
	return ""
}

// TransportCause is transportCause for the command line's reachability
// check.
func TransportCause(target client.BaseURL, err error) string { return transportCause(target, err) }

// withScheme is the target's base URL, without its user information, in
// another scheme.
func withScheme(target client.BaseURL, scheme string) string {
	u := target.URL()
	u.User, u.Scheme = nil, scheme
	return u.String()
}

// maskKey shows an api_key's first four characters only.
func maskKey(k string) string {
	r := []rune(k)
	if len(r) <= 4 {
		return "…"
	}
	return string(r[:4]) + "…"
}
