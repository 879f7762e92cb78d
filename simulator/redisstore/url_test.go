package redisstore_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/redisstore"
)

// The Sentinel URL: addresses, the primary's name, the database and the
// data nodes' user and password; a bad one is refused naming what is
// wrong, and no message shows the password.
func TestSentinelURL(t *testing.T) {
	o, err := redisstore.ParseSentinelURL("redis+sentinel://gw:p%40ss@10.0.0.1:26379,10.0.0.2:26380,[::1]:26381/mymaster/3")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.SentinelAddrs, []string{"10.0.0.1:26379", "10.0.0.2:26380", "[::1]:26381"}) || o.MasterName != "mymaster" ||
		o.DB != 3 || o.Username != "gw" || o.Password != "p@ss" {
		t.Errorf("parsed %+v", o)
	}
	if o, err := redisstore.ParseSentinelURL("redis+sentinel://127.0.0.1:26379/gwsim"); err != nil || o.DB != 0 || o.Password != "" {
		t.Errorf("no database, no password: %+v %v", o, err)
	}
	for raw, want := range map[string]string{
		"redis+sentinel://u:s3cret@127.0.0.1:26379":            "MASTER",
		"redis+sentinel://u:s3cret@127.0.0.1:26379/":           "MASTER",
		"redis+sentinel://u:s3cret@127.0.0.1/m":                "HOST:PORT",
		"redis+sentinel://u:s3cret@127.0.0.1:0/m":              "port",
		"redis+sentinel://u:s3cret@127.0.0.1:1,,127.0.0.1:2/m": "HOST:PORT",
		"redis+sentinel://u:s3cret@127.0.0.1:1/m/-1":           "database",
		"redis+sentinel://u:s3cret@127.0.0.1:1/m/0/x":          "MASTER",
		"redis+sentinel://u:s3cret@127.0.0.1:1/m?password=x":   "query",
		"redis+sentinel://u:s3cret%zz@127.0.0.1:1/m":           "percent",
	} {
		_, err := redisstore.ParseSentinelURL(raw)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v, want an error naming %q without the password", raw, err, want)
		}
	}
	if got := redisstore.Redact("redis+sentinel://gw:s3cret@h1:1,h2:2/m/0"); got != "redis+sentinel://gw@h1:1,h2:2/m/0" {
		t.Errorf("Redact: %s", got)
	}
}

// replicated on a Cluster is refused at once, before Redis is asked.
func TestReplicatedNotOnCluster(t *testing.T) {
	_, err := redisstore.Open(t.Context(), fleet.Demo(), redisstore.Options{URL: "redis://127.0.0.1:1?addr=127.0.0.1:2",
		Durability: redisstore.DurabilityReplicated})
	if err == nil || !strings.Contains(err.Error(), "not supported on a Redis Cluster") {
		t.Errorf("replicated on a Cluster URL: %v", err)
	}
}
