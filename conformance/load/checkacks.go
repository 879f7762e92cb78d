package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// AckCheck reads, for each device an ack log changed, what the target
// shows through the admin API every gwsim has (CONTRACT 7:
// GET /_sim/gateways/{mac}/devices/{sn}) and compares it with the log.
type AckCheck struct {
	// Target is the base URL of the implementation (any replica).
	Target string
	// AdminToken is the admin API's bearer token, if it needs one.
	AdminToken string
	// Client sends the reads; a client with a 10 s timeout when nil.
	Client *http.Client
	// Parallel reads at once; 8 when zero.
	Parallel int
}

// AckReport is what CheckAcks found.
type AckReport struct {
	// Devices is the number of devices checked, Fields the values (names
	// included) held to the log.
	Devices, Fields int
	// Mismatches are in the order of the devices' "mac/sn".
	Mismatches []Mismatch
}

// ErrAdmin is an admin API that cannot be read: the check could not be
// made (as opposed to finding changes lost).
var ErrAdmin = errors.New("the admin API could not be read")

// CheckAcks compares each device of want (Expectations of an ack log)
// with the target's state. An error means the check could not be made
// (the target unreachable, the admin API refusing or unavailable); a
// device the target does not know is a Mismatch.
func (c AckCheck) CheckAcks(ctx context.Context, want map[string]*Expected) (*AckReport, error) {
	base, err := url.Parse(strings.TrimSuffix(c.Target, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("target %q must be an http:// or https:// base URL", RedactURL(c.Target))
	}
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	parallel := c.Parallel
	if parallel <= 0 {
		parallel = 8
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rep := &AckReport{Devices: len(keys)}
	found := make([][]Mismatch, len(keys))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error // the first read that failed stops the others
	)
	next := make(chan int)
	for range min(parallel, len(keys)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				m, err := c.checkDevice(ctx, client, base, want[keys[i]])
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
				}
				found[i] = m
			}
		}()
	}
	for i := range keys {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	for i, k := range keys {
		x := want[k]
		rep.Fields += len(x.Values)
		if len(x.Name) > 0 {
			rep.Fields++
		}
		rep.Mismatches = append(rep.Mismatches, found[i]...)
	}
	return rep, nil
}

func (c AckCheck) checkDevice(ctx context.Context, client *http.Client, base *url.URL, x *Expected) ([]Mismatch, error) {
	u := *base
	u.Path = base.Path + "/_sim/gateways/" + url.PathEscape(x.MAC) + "/devices/" + url.PathEscape(x.SN)
	u.RawPath = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if c.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said once, by the caller
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrAdmin, RedactURL(c.Target), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return []Mismatch{{MAC: x.MAC, SN: x.SN, Field: "device", Expected: []string{"present"}, Got: "(no such device)"}}, nil
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, fmt.Errorf("%w: %s answered %d: give its --admin-token", ErrAdmin, RedactURL(c.Target), resp.StatusCode)
	default:
		return nil, fmt.Errorf("%w: %s answered %d to %s: %s", ErrAdmin, RedactURL(c.Target), resp.StatusCode,
			u.Path, strings.TrimSpace(cut(body)))
	}
	var d struct {
		Name  string         `json:"name"`
		State map[string]any `json:"state"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("%w: %s: the device %s/%s is not CONTRACT 7's JSON: %v", ErrAdmin, RedactURL(c.Target), x.MAC, x.SN, err)
	}
	return x.Check(d.Name, d.State), nil
}
