package simulator_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/internal/persist"
	"github.com/gwdmi/gwtools/simulator/redisstore"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestBackendByURL: the --store URL's scheme, and nothing else, picks the
// backend; a value of no known scheme is refused.
func TestBackendByURL(t *testing.T) {
	ptr := func(o server.OpenBackend) uintptr { return reflect.ValueOf(o).Pointer() }
	for url, want := range map[string]server.OpenBackend{
		"":                                 server.OpenMemory,
		"memory:":                          server.OpenMemory,
		"file:state.db":                    persist.OpenBackend,
		"file:":                            persist.OpenBackend, // refused when opened, naming the path
		"redis://127.0.0.1:6379/0":         redisstore.OpenBackend,
		"rediss://127.0.0.1:6379/0":        redisstore.OpenBackend,
		"redis://h:1?addr=h:2":             redisstore.OpenBackend,
		"redis+sentinel://h:1,h:2/gwsim/0": redisstore.OpenBackend,
	} {
		got, err := simulator.Backend(url)
		if err != nil || ptr(got) != ptr(want) {
			t.Errorf("Backend(%q): %v, %v", url, got, err)
		}
	}
	for _, url := range []string{"memory", "127.0.0.1:6379", "memcached://h:1", "FILE:x", "redis:/x", "mem:"} {
		if _, err := simulator.Backend(url); !errors.Is(err, simulator.ErrNotStoreURL) {
			t.Errorf("Backend(%q): %v, want ErrNotStoreURL", url, err)
		}
	}
}

// TestRedisKeepsNoLocalState: on Redis the process builds no in-memory
// store (only the fleet's structure): a change made in Redis behind its
// back is what it serves.
func TestRedisKeepsNoLocalState(t *testing.T) {
	r := simtest.StartRedis(t, false)
	sim, err := simulator.Start("127.0.0.1:0", simulator.Options{Fleet: simtest.Fleet(), StoreURL: r.URL(), StoreReset: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	if sim.Store != nil || sim.Backend.Local != nil {
		t.Fatalf("on Redis the simulator holds an in-memory store")
	}
	mem, err := simulator.Start("127.0.0.1:0", simulator.Options{Fleet: simtest.Fleet()})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if mem.Store == nil || mem.Store != mem.Backend.Local {
		t.Fatalf("memory: the simulator's Store is not its backend's state")
	}
	sn := simtest.SN('a', 5)
	c := simtest.NewClient(t, sim.URL())
	if d := c.Device(simtest.MACA, sn); d.Name != "Light Dimmer a" {
		t.Fatalf("before: %+v", d)
	}
	// Another replica's rename, as Redis holds it.
	rdb, err := redisstore.NewClient(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	key := redisstore.DefaultPrefix + "{gw:" + simtest.MACA + "}:d:" + simtest.AccountA + ":" + sn
	if err := rdb.HSet(t.Context(), key, "n", "Renamed elsewhere").Err(); err != nil {
		t.Fatal(err)
	}
	if d := c.Device(simtest.MACA, sn); d.Name != "Renamed elsewhere" {
		t.Errorf("after a change in Redis the replica serves %+v", d)
	}
}

// TestSentinelPasswordOnlyForSentinel: a Sentinel password with a store
// that follows no Sentinel is refused, never silently dropped, and the
// refusal does not show it.
func TestSentinelPasswordOnlyForSentinel(t *testing.T) {
	for _, url := range []string{"", "memory:", "file:" + t.TempDir() + "/state.db"} {
		_, err := simulator.Build(simulator.Options{Fleet: simtest.Fleet(), StoreURL: url, SentinelPassword: "s3cret-sentinel"})
		if err == nil || !strings.Contains(err.Error(), "redis+sentinel://") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("store %q with a Sentinel password: %v", url, err)
		}
	}
}
