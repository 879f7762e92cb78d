package redisstore_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Whenever a change would be refused for the store's sake, gwsim says so
// everywhere an operator looks, with a real redis-server in each of the
// three states: Redis down, no primary (the Redis reached is a read-only
// replica), and no replica confirming writes under --store-durability
// replicated. In each, held for holdFor: /_sim/health answers 503
// degraded with the reason, gwsim_store_writable is 0 (gwsim_redis_up 0
// only while Redis cannot be read), a change answers 503
// storage_unavailable, and the log says "storage unavailable" once when
// it starts and "storage available again" once when it ends, with a
// duration within a second of the true one.
func TestHealthTellsWhenChangesWouldBeRefused(t *testing.T) {
	simtest.Heavy(t)
	const holdFor = 2 * time.Second
	type state struct {
		name   string
		reason string
		redis  string // gwsim_redis_up while held
		// setup starts Redis and returns its URL, gwsim's extra flags, and
		// the functions that bring the state on and end it.
		setup func(t *testing.T) (url string, args []string, on, off func())
	}
	ctx := context.Background()
	states := []state{
		{"redis down", "cannot be reached", "0", func(t *testing.T) (string, []string, func(), func()) {
			r := simtest.StartRedis(t, true)
			return r.URL(), nil, r.Kill, r.Start
		}},
		{"no primary", "no Redis primary", "1", func(t *testing.T) (string, []string, func(), func()) {
			primary := simtest.StartRedis(t, false)
			other := simtest.StartReplica(t, primary)
			pc := redis.NewClient(&redis.Options{Addr: primary.Addr()})
			oc := redis.NewClient(&redis.Options{Addr: other.Addr()})
			t.Cleanup(func() { pc.Close(); oc.Close() })
			on := func() {
				// The replica promoted, the primary demoted to its replica
				// (a failover gwsim's redis:// URL does not follow).
				if err := oc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
					t.Fatal(err)
				}
				if err := pc.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(other.Port)).Err(); err != nil {
					t.Fatal(err)
				}
			}
			off := func() {
				if err := pc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
					t.Fatal(err)
				}
			}
			return primary.URL(), nil, on, off
		}},
		{"no replica confirms", "no Redis replica confirmed", "1", func(t *testing.T) (string, []string, func(), func()) {
			primary := simtest.StartRedis(t, false)
			replica := simtest.StartReplica(t, primary)
			return primary.URL(), []string{"--store-durability", "replicated"}, replica.Kill, replica.Start
		}},
	}
	took := regexp.MustCompile(`unavailable_for=(\S+)`)
	for _, st := range states {
		t.Run(strings.ReplaceAll(st.name, " ", "_"), func(t *testing.T) {
			url, args, on, off := st.setup(t)
			p := replicas(t, urlOnly(url), 1, append(args, "--log-level", "info", "--log-summary", "0")...)[0]
			c := simtest.NewClient(t, p.URL)
			i, ty := thermostat(t)
			sn := simtest.SN('a', i)
			change := func() *simtest.Response {
				return c.Send(device.SendCommand, device.JSON, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", device.JSON), "18")))
			}
			health := func() (int, map[string]string) {
				status, _, body := c.Admin(http.MethodGet, "/_sim/health", "")
				var h map[string]string
				json.Unmarshal(body, &h)
				return status, h
			}
			metric := func(name string) string {
				_, _, body := c.Admin(http.MethodGet, "/metrics", "")
				for _, line := range strings.Split(string(body), "\n") {
					if v, ok := strings.CutPrefix(line, name+" "); ok {
						return v
					}
				}
				return "(none)"
			}
			waitLog := func(what string) {
				t.Helper()
				deadline := time.Now().Add(15 * time.Second)
				for !strings.Contains(p.Stderr(), what) {
					if time.Now().After(deadline) {
						t.Fatalf("no log line %q after 15 s:\n%s", what, p.Stderr())
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if status, h := health(); status != http.StatusOK {
				t.Fatalf("health before: %d %v", status, h)
			}
			if w, u := metric("gwsim_store_writable"), metric("gwsim_redis_up"); w != "1" || u != "1" {
				t.Fatalf("before: gwsim_store_writable %s, gwsim_redis_up %s", w, u)
			}
			change().OK(t, device.JSON)

			began := time.Now()
			on()
			waitLog("storage unavailable")
			status, h := health()
			if status != http.StatusServiceUnavailable || h["status"] != "degraded" || !strings.Contains(h["reason"], st.reason) {
				t.Errorf("health while held: %d %v (want 503 degraded, reason %q)", status, h, st.reason)
			}
			if w, u := metric("gwsim_store_writable"), metric("gwsim_redis_up"); w != "0" || u != st.redis {
				t.Errorf("while held: gwsim_store_writable %s (want 0), gwsim_redis_up %s (want %s)", w, u, st.redis)
			}
			// Readiness keeps answering: the replica stays behind its
			// Service and gives apps the documented 503.
			var ready map[string]string
			status, _, body := c.Admin(http.MethodGet, "/_sim/ready", "")
			json.Unmarshal(body, &ready)
			if status != http.StatusOK || ready["storage"] != "unavailable" {
				t.Errorf("/_sim/ready while held: %d %s (want 200, storage unavailable)", status, body)
			}
			res := change()
			if res.Status != http.StatusServiceUnavailable || res.Code != device.CodeStorageUnavailable {
				t.Errorf("a change while held: %s", res)
			}
			time.Sleep(holdFor - time.Since(began))
			off()
			ended := time.Now()
			waitLog("storage available again")
			held := ended.Sub(began)
			if status, h := health(); status != http.StatusOK {
				t.Errorf("health after: %d %v", status, h)
			}
			if w, u := metric("gwsim_store_writable"), metric("gwsim_redis_up"); w != "1" || u != "1" {
				t.Errorf("after: gwsim_store_writable %s, gwsim_redis_up %s", w, u)
			}
			change().OK(t, device.JSON)
			logs := p.Stderr()
			for what, n := range map[string]int{"storage unavailable": 1, "storage available again": 1} {
				if got := strings.Count(logs, what); got != n {
					t.Errorf("%q logged %d times, want %d:\n%s", what, got, n, logs)
				}
			}
			if !strings.Contains(logs, st.reason) {
				t.Errorf("the log does not give the reason %q:\n%s", st.reason, logs)
			}
			m := took.FindStringSubmatch(logs)
			if m == nil {
				t.Fatalf("no unavailable_for in the log:\n%s", logs)
			}
			d, err := time.ParseDuration(m[1])
			if err != nil || d < held-time.Second || d > held+time.Second {
				t.Errorf("logged unavailable_for=%s; it was held %s", m[1], held.Round(time.Millisecond))
			}
			t.Logf("%s: held %s, logged %s", st.name, held.Round(time.Millisecond), m[1])
		})
	}
}

// urlOnly is a redis URL for replicas().
type urlOnly string

func (u urlOnly) URL() string { return string(u) }
