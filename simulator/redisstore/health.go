package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Health is the store's server.Health: Redis answers, and still holds
// this fleet (the fleet's sha256 in PREFIX meta).
type Health struct{ s *Store }

// Health is the store's server.Health.
func (s *Store) Health() Health { return Health{s} }

// Name implements server.Health.
func (Health) Name() string { return "redis" }

// Check implements server.Health with one HGET.
func (h Health) Check(ctx context.Context) *device.Error {
	have, err := h.s.rdb.HGet(ctx, h.s.key("meta"), "fleet").Result()
	switch {
	case errors.Is(err, redis.Nil):
		return errFleetLost()
	case err != nil:
		return unavailable(err)
	case have != h.s.hash:
		return device.Errorf(device.CodeStorageUnavailable, "",
			"the shared store (Redis) now holds another fleet (a replica started with --store-reset replaced it): restart this replica with that fleet")
	}
	return nil
}

// errFleetLost is the error of a Redis that answers without the fleet.
func errFleetLost() *device.Error {
	return device.Errorf(device.CodeStorageUnavailable, "",
		"the shared store (Redis) answers but no longer holds the fleet: it lost its data (restarted without persistence, or flushed); "+
			"POST /_sim/reset on any replica, or restarting one with --store-reset, loads the fleet again (the state before is lost)")
}
