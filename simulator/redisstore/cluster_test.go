package redisstore_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/redisstore"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Two replicas on a real three-node Redis Cluster: the conformance suite
// passes against each, a change through one is seen through the other,
// and the journal on one shows the entries both served.
func TestReplicasOnRedisCluster(t *testing.T) {
	simtest.Heavy(t)
	c := simtest.StartCluster(t)
	ps := replicas(t, c, 2)

	// The fleet's keys really are spread over the three nodes.
	rdb, err := redisstore.NewClient(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("%s makes a %T, not a Cluster client", c.URL(), rdb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var withKeys int
	for _, n := range c.Nodes {
		nc := redis.NewClient(&redis.Options{Addr: n.Addr()})
		size, err := nc.DBSize(ctx).Result()
		nc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if size > 0 {
			withKeys++
		}
	}
	if withKeys < 2 {
		t.Errorf("the fleet's keys are on %d of the 3 nodes", withKeys)
	}
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}

	conformOnEach(t, ps)

	// Reset through replica 2 touches every slot; replica 1 sees it.
	i, ty := thermostat(t)
	a, b := simtest.NewClient(t, ps[0].URL), simtest.NewClient(t, ps[1].URL)
	b.Reset()
	if m := a.Messages(simtest.MACA); len(m) != 0 {
		t.Errorf("after reset through replica 2, replica 1 sees %d messages", len(m))
	}

	// A command and a rename through replica 1 are seen through replica 2,
	// for a device on each gateway (and so on different slots).
	for k, mac := range []string{simtest.MACA, simtest.MACB} {
		prefix := byte('a' + k)
		cl := a
		if mac == simtest.MACB {
			cl = simtest.NewClient(t, ps[0].URL)
			cl.Account, cl.APIKey, cl.Secret, cl.MAC = simtest.AccountB, simtest.KeyB, simtest.SecretB, mac
		}
		sn := simtest.SN(prefix, i)
		point := fmt.Sprint(20 + k)
		cl.Send(device.SendCommand, device.XML, cl.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", device.XML), point))).OK(t, device.XML)
		cl.Send(device.UpdateName, device.JSON, append(cl.Envelope(), simtest.S("sn", sn), simtest.S("name", "Cluster "+mac))).OK(t, device.JSON)
		if d := b.Device(mac, sn); fmt.Sprint(d.State["heating_point"]) != point || d.Name != "Cluster "+mac {
			t.Errorf("replica 2 sees %v %q after a command and rename through replica 1 on gateway %s", d.State, d.Name, mac)
		}
	}
	b.Send(device.SendMessage, device.JSON, append(b.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", "smoke=1"))).OK(t, device.JSON)
	if m := a.Messages(simtest.MACA); len(m) != 1 || m[0].Value != "smoke=1" {
		t.Errorf("messages through replica 1 after one through replica 2: %d, last %+v", len(m), m[len(m)-1:])
	}

	// One journal: replica 2 shows the requests both replicas served.
	var entries []server.Entry
	b.AdminJSON(http.MethodGet, "/_sim/journal?limit=50", "", &entries)
	names := map[string]int{}
	for _, e := range entries {
		names[e.Replica]++
	}
	if len(names) != 2 || names[""] > 0 {
		t.Errorf("journal on replica 2: %d entries from replicas %v, want entries from both", len(entries), names)
	}

	// A replica started with --store-reset empties every node's keys
	// (SCAN on each master, keys unlinked slot by slot) and loads the
	// fleet again: replica 1 sees the fleet's names and no message.
	replicas(t, c, 1, "--store-reset")
	for k, mac := range []string{simtest.MACA, simtest.MACB} {
		want := "Thermostat " + string(rune('a'+k))
		if d := a.Device(mac, simtest.SN(byte('a'+k), i)); d.Name != want {
			t.Errorf("after --store-reset, replica 1 sees %q on gateway %s, want %q", d.Name, mac, want)
		}
	}
	if m := a.Messages(simtest.MACA); len(m) != 0 {
		t.Errorf("after --store-reset, replica 1 sees %d messages", len(m))
	}
	var after []server.Entry
	a.AdminJSON(http.MethodGet, "/_sim/journal?limit=50", "", &after)
	if len(after) >= len(entries) {
		t.Errorf("after --store-reset the journal has %d entries (before: %d)", len(after), len(entries))
	}
}
