package redisstore

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/simulator/clients"
)

// clientReports is the client report shared by the replicas
// (clients.Shared): each replica's clients in a hash of its own,
// PREFIX clients:EPOCH:r:REPLICA, one field per client (its id, or its
// name when it has none) holding the client's report as JSON; the set
// PREFIX clients:EPOCH:replicas names the replicas. PREFIX clients:epoch
// counts the resets: a DELETE /_sim/clients raises it, and every replica
// then starts afresh. Each key lives clientsTTL after its last write, so
// that the reports of replicas long gone, and of past epochs, go.
type clientReports struct{ s *Store }

// clientsTTL is how long a replica's report is kept after its last fold.
const clientsTTL = 24 * time.Hour

// ClientReports is the store's shared client report.
func (s *Store) ClientReports() clients.Shared { return clientReports{s} }

func (c clientReports) epochKey() string { return c.s.key("clients", "epoch") }

func (c clientReports) replicasKey(epoch uint64) string {
	return c.s.key("clients", strconv.FormatUint(epoch, 10), "replicas")
}

func (c clientReports) replicaKey(epoch uint64, replica string) string {
	return c.s.key("clients", strconv.FormatUint(epoch, 10), "r", replica)
}

func (c clientReports) epoch(ctx context.Context) (uint64, error) {
	v, err := c.s.rdb.Get(ctx, c.epochKey()).Uint64()
	if err == redis.Nil {
		return 0, nil
	}
	return v, err
}

// Save implements clients.Shared.
func (c clientReports) Save(ctx context.Context, epoch uint64, changed []clients.Client) (uint64, error) {
	cur, err := c.epoch(ctx)
	if err != nil {
		return 0, err
	}
	if epoch != clients.NoEpoch && epoch != cur {
		return cur, nil
	}
	hash, set := c.replicaKey(cur, c.s.replica), c.replicasKey(cur)
	if len(changed) == 0 {
		// Named among the replicas sharing the report, with or without
		// requests of its own.
		_, err := c.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, set, c.s.replica)
			p.Expire(ctx, set, clientsTTL)
			return nil
		})
		return cur, err
	}
	fields := make([]any, 0, 2*len(changed))
	for _, cl := range changed {
		b, err := json.Marshal(cl)
		if err != nil {
			return cur, err
		}
		name := cl.ID
		if name == "" {
			name = "name:" + cl.Client
		}
		fields = append(fields, name, b)
	}
	_, err = c.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, hash, fields...)
		p.Expire(ctx, hash, clientsTTL)
		p.SAdd(ctx, set, c.s.replica)
		p.Expire(ctx, set, clientsTTL)
		return nil
	})
	return cur, err
}

// Load implements clients.Shared.
func (c clientReports) Load(ctx context.Context) (map[string][]clients.Client, error) {
	cur, err := c.epoch(ctx)
	if err != nil {
		return nil, err
	}
	names, err := c.s.rdb.SMembers(ctx, c.replicasKey(cur)).Result()
	if err != nil && err != redis.Nil {
		return nil, err
	}
	cmds := make([]*redis.MapStringStringCmd, len(names))
	_, err = c.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.HGetAll(ctx, c.replicaKey(cur, n))
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, err
	}
	out := make(map[string][]clients.Client, len(names))
	for i, n := range names {
		out[n] = []clients.Client{}
		for _, raw := range cmds[i].Val() {
			var cl clients.Client
			if json.Unmarshal([]byte(raw), &cl) == nil {
				out[n] = append(out[n], cl)
			}
		}
	}
	return out, nil
}

// Reset implements clients.Shared.
func (c clientReports) Reset(ctx context.Context) error {
	return c.s.rdb.Incr(ctx, c.epochKey()).Err()
}
