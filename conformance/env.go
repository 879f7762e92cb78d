// Package conformance is gwconform: a Ginkgo v2 suite of conformance checks
// of the Gateway Device Management Interface that runs against any target
// URL, or against the simulator in-process, and writes JUnit, JSON and HTML
// reports. Run is its whole command line; cmd/gwconform only calls it.
package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// Env is everything the checks need to know about the run, filled from the
// flags and checked before any spec runs. The suite reads it through env.
type Env struct {
	// BaseURL is the target.
	BaseURL string
	Fleet   *fleet.Fleet
	Target  *fleet.Target
	Client  *client.Client
	// Signer signs with the target's scheme; KnownSign says whether a wrong
	// sign can be told from a right one (md5 or a sign command).
	Signer    client.Signer
	KnownSign bool
	Location  *time.Location
	// Admin is the base URL of a gwsim admin API (empty when the target
	// has none) and AdminToken its bearer token.
	Admin      string
	AdminToken string
	// AdminNeedsToken: the target has gwsim's admin API, but it answered
	// 401 to the run's token (or to none): the sim checks need
	// --admin-token.
	AdminNeedsToken bool
	// Embedded says the target is the in-process simulator.
	Embedded bool
	// DryRun records each request and skips the check instead of sending.
	DryRun bool
	Seed   int64
	// Now is the clock for timestamps.
	Now func() time.Time
	// Worker is this process's worker number and Workers how many there
	// are in a --parallel run (0 and 1 when serial).
	Worker, Workers int
	// MaxRequests caps the requests of a run (--max-requests; 0: none).
	MaxRequests int
	// ReportCredentials keeps api_keys whole in the reports
	// (--report-credentials); by default they are masked.
	ReportCredentials bool
	// silent counts requests in a row that got no answer or a 5xx; sent
	// counts every request.
	silent atomic.Int64
	sent   atomic.Int64
	// done counts the checks finished, for progress lines.
	done atomic.Int64
	// touched holds each device the run changed as it was before, to be
	// put back when the run ends (putBack, putBackAll).
	touchMu sync.Mutex
	touched map[string]*touched
	// collect, when set, makes the declarations list the checks instead
	// of declaring specs: the catalog.
	collect *[]check.Meta
	// assignment is the worker of each check in a --parallel run.
	assignOnce sync.Once
	assignment map[string]int
}

// faker gives a check its own reproducible stream of values: the same run
// seed and check ID draw the same values whatever else ran before.
func (env *Env) faker(id string) *gofakeit.Faker {
	h := fnv.New64a()
	io.WriteString(h, id)
	return gofakeit.New(env.Seed ^ int64(h.Sum64()))
}

// device returns the fleet's device of a type, if the target has one.
func (env *Env) device(typeName string) (fleet.Device, bool) {
	d, ok := env.Target.Devices[typeName]
	return d, ok
}

// anyDevice is a device for checks about the envelope rather than a type:
// the first type in published order that the fleet has.
func (env *Env) anyDevice() (fleet.Device, bool) {
	for _, t := range device.Types {
		if d, ok := env.Target.Devices[t.Name]; ok {
			return d, true
		}
	}
	return fleet.Device{}, false
}

// adminGet reads a gwsim admin API path into v.
func (env *Env) adminGet(ctx context.Context, path string, v any) error {
	_, err := env.adminGetHeader(ctx, path, v)
	return err
}

// adminGetHeader is adminGet that also returns the answer's headers.
func (env *Env) adminGetHeader(ctx context.Context, path string, v any) (http.Header, error) {
	if env.Admin == "" {
		return nil, fmt.Errorf("the target has no gwsim admin API")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(env.Admin, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	if env.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	}
	resp, err := adminHTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &adminError{path: path, status: resp.StatusCode, body: strings.TrimSpace(string(body))}
	}
	return resp.Header, json.Unmarshal(body, v)
}

// adminHTTP follows no redirect: a hostile target must not lead the harness,
// bearer token included, to another host.
var adminHTTP = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// deviceState is a device as GET /_sim/gateways/{mac}/devices/{sn} shows it.
type deviceState struct {
	SN    string         `json:"sn"`
	Type  string         `json:"type"`
	Name  string         `json:"name"`
	State map[string]any `json:"state"`
}

// adminError is an admin API answer other than 200.
type adminError struct {
	path   string
	status int
	body   string
}

func (e *adminError) Error() string {
	return fmt.Sprintf("GET %s: %d %s", e.path, e.status, e.body)
}

// ProbeAdmin reports whether base serves gwsim's admin API, and whether it
// does but refused the token given (401: the sim checks need
// --admin-token).
func ProbeAdmin(ctx context.Context, base, token string) (ok, needsToken bool) {
	e := &Env{Admin: base, AdminToken: token}
	var health struct{ Status string }
	if err := e.adminGet(ctx, "/_sim/health", &health); err != nil || health.Status != "ok" {
		if ae, isAdmin := err.(*adminError); isAdmin && ae.status == http.StatusUnauthorized {
			return false, true
		}
		return false, false
	}
	// Health stays open for liveness probes; whether the token opens the
	// rest of the admin API is seen on a call that needs it.
	var faults map[string]any
	err := e.adminGet(ctx, "/_sim/faults", &faults)
	if ae, isAdmin := err.(*adminError); isAdmin && ae.status == http.StatusUnauthorized {
		return false, true
	}
	return err == nil, false
}

// adminSkip is why a sim check cannot run, or "" when it can.
func (env *Env) adminSkip() string {
	switch {
	case env.Admin != "":
		return ""
	case env.AdminNeedsToken:
		return "the target's gwsim admin API answered 401: needs --admin-token"
	}
	return "the target has no gwsim admin API"
}
