package redisstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Sessions keeps the dashboard's sign-ins in Redis (server.SessionStore):
// one key per session, PREFIX session:SHA, expiring with the session. The
// key holds a hash of the id, so that what Redis holds is not a cookie.
type Sessions struct{ s *Store }

// Sessions is the store's SessionStore.
func (s *Store) Sessions() *Sessions { return &Sessions{s} }

func (ss *Sessions) key(id string) string {
	h := sha256.Sum256([]byte(id))
	return ss.s.key("session", hex.EncodeToString(h[:16]))
}

// Open implements server.SessionStore.
func (ss *Sessions) Open(id string, expires time.Time) *device.Error {
	ctx, cancel := ss.s.ctx()
	defer cancel()
	ttl := time.Until(expires)
	if ttl < time.Millisecond { // never 0 (no expiry) nor -1 (KEEPTTL) to go-redis
		ttl = time.Millisecond
	}
	if err := ss.s.rdb.Set(ctx, ss.key(id), 1, ttl).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// Live implements server.SessionStore.
func (ss *Sessions) Live(id string) (bool, *device.Error) {
	ctx, cancel := ss.s.ctx()
	defer cancel()
	err := ss.s.rdb.Get(ctx, ss.key(id)).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, unavailable(err)
	}
	return true, nil
}

// End implements server.SessionStore.
func (ss *Sessions) End(id string) *device.Error {
	ctx, cancel := ss.s.ctx()
	defer cancel()
	if err := ss.s.rdb.Del(ctx, ss.key(id)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}
