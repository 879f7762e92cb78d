package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/store"
)

// update sets fields of a device hash when the device exists with the
// expected type: 1 applied, 0 no such device, -1 another type. A command's
// settings are validated in Go first; the script only makes the check and
// the write one step, so concurrent commands through different replicas
// never lose a field.
var update = redis.NewScript(`
local t = redis.call('HGET', KEYS[1], 't')
if not t then return 0 end
if t ~= ARGV[1] then return -1 end
if #ARGV > 1 then redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
return 1
`)

// HasGateway reports whether the account has the gateway (the fleet's
// structure, held by every replica).
func (s *Store) HasGateway(accountID, mac string) (bool, *device.Error) {
	return s.index.HasGateway(accountID, mac), nil
}

// Counts is the size of the fleet.
func (s *Store) Counts() (accounts, gateways, devices int) { return s.index.Counts() }

// check finds the device in the fleet: its type, or the error the
// in-memory store answers.
func (s *Store) check(accountID, mac, sn string) (*device.Type, *device.Error) {
	return s.index.Find(accountID, mac, sn)
}

func (s *Store) apply(accountID, mac, sn string, t *device.Type, fields []any) *device.Error {
	args := append([]any{t.Name}, fields...)
	n, err := s.updates.update(s.devKey(accountID, mac, sn), args)
	if errors.Is(err, errNotReplicated) {
		return s.notReplicated()
	}
	if err != nil {
		return unavailable(err)
	}
	switch n {
	case 1:
		return nil
	case -1:
		return device.Errorf(device.CodeTypeMismatch, device.FieldType, "device %s is not %s", sn, device.A(t.Name))
	}
	// The fleet has the device but Redis does not: Redis lost its data
	// (restarted without persistence, or flushed).
	return errFleetLost()
}

// Command applies a validated command: all its settings or none.
func (s *Store) Command(accountID, mac, sn string, t *device.Type, settings []device.Setting) *device.Error {
	have, derr := s.check(accountID, mac, sn)
	if derr != nil {
		return derr
	}
	if have.ID != t.ID {
		return device.Errorf(device.CodeTypeMismatch, device.FieldType, "device %s is %s, not %s", sn, device.A(have.Name), device.A(t.Name))
	}
	fields := make([]any, 0, 2*len(settings))
	for _, set := range settings {
		if t.Fields[set.Index].Kind == device.Text {
			fields = append(fields, "x", set.Text)
		} else {
			fields = append(fields, strconv.Itoa(set.Index), strconv.FormatFloat(set.Num, 'g', -1, 64))
		}
	}
	return s.apply(accountID, mac, sn, t, fields)
}

// Rename sets a device's display name.
func (s *Store) Rename(accountID, mac, sn, name string) *device.Error {
	t, derr := s.check(accountID, mac, sn)
	if derr != nil {
		return derr
	}
	return s.apply(accountID, mac, sn, t, []any{"n", name})
}

// appendMessage appends a message to a gateway's capped log and counts
// it, when the count exists (it is written with the fleet: without it,
// Redis lost its data): 1 appended, 0 lost. KEYS: log, count; ARGV:
// message, limit.
var appendMessage = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('INCR', KEYS[2])
return 1
`)

// Message appends to a gateway's capped log and counts it, in one script
// (the keys share the gateway's hash tag), followed by WAIT in the same
// pipeline with DurabilityReplicated.
func (s *Store) Message(accountID, mac string, m store.Message) *device.Error {
	if !s.index.HasGateway(accountID, mac) {
		return device.Errorf(device.CodeGatewayNotFound, device.FieldMAC, "account %s has no gateway %s", accountID, mac)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return device.Errorf(device.CodeMalformedBody, "", "message: %v", err)
	}
	ctx, cancel := s.writeCtx()
	defer cancel()
	keys := []string{s.msgKey(accountID, mac), s.totalKey(accountID, mac)}
	run := func(eval bool) (int64, bool, error) {
		var c *redis.Cmd
		confirmed, err := s.pipelineWait(ctx, s.wait, func(p redis.Pipeliner) error {
			if eval {
				c = appendMessage.Eval(ctx, p, keys, b, s.limit)
			} else {
				c = appendMessage.EvalSha(ctx, p, keys, b, s.limit)
			}
			return nil
		})
		if err != nil && !isReplyError(err) {
			return 0, false, err
		}
		n, err := c.Int64()
		return n, confirmed, err
	}
	n, confirmed, err := run(false)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		n, confirmed, err = run(true)
	}
	switch {
	case err != nil:
		return unavailable(err)
	case n == 0:
		return errFleetLost()
	case !confirmed:
		return s.notReplicated()
	}
	return nil
}

// view reads a device hash into the admin view.
func view(t *device.Type, sn string, h map[string]string) store.DeviceView {
	st := t.DefaultState()
	for i, f := range t.Fields {
		if f.Kind == device.Text {
			st.Text = h["x"]
			continue
		}
		if v, err := strconv.ParseFloat(h[strconv.Itoa(i)], 64); err == nil {
			st.Num[i] = v
		}
	}
	return store.DeviceView{SN: sn, Type: t.Name, Name: h["n"], State: t.StateMap(st)}
}

// Device returns one device by gateway mac (in any account) and sn.
func (s *Store) Device(mac, sn string) (store.DeviceView, bool, *device.Error) {
	mac, sn = strings.ToLower(mac), strings.ToLower(sn)
	acc, ok := s.index.Owner(mac)
	if !ok {
		return store.DeviceView{}, false, nil
	}
	t, derr := s.index.Find(acc, mac, sn)
	if derr != nil {
		return store.DeviceView{}, false, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	h, err := s.rdb.HGetAll(ctx, s.devKey(acc, mac, sn)).Result()
	if err != nil {
		return store.DeviceView{}, false, unavailable(err)
	}
	if len(h) == 0 {
		return store.DeviceView{}, false, errFleetLost()
	}
	return view(t, sn, h), true, nil
}

func decodeMessages(raw []string) []store.Message {
	out := make([]store.Message, 0, len(raw))
	for _, r := range raw {
		var m store.Message
		if json.Unmarshal([]byte(r), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Messages returns a gateway's kept messages, oldest first, and how many
// it received in all.
func (s *Store) Messages(mac string) ([]store.Message, uint64, bool, *device.Error) {
	mac = strings.ToLower(mac)
	acc, ok := s.index.Owner(mac)
	if !ok {
		return nil, 0, false, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var lr *redis.StringSliceCmd
	var tc *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		lr = p.LRange(ctx, s.msgKey(acc, mac), 0, -1)
		tc = p.Get(ctx, s.totalKey(acc, mac))
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, 0, false, unavailable(err)
	}
	total, _ := strconv.ParseUint(tc.Val(), 10, 64)
	return decodeMessages(lr.Val()), total, true, nil
}

// Dump is every account, gateway, device and message log, read in
// pipelines; maxDevices > 0 stops after that many devices.
func (s *Store) Dump(maxDevices int) ([]store.AccountView, bool, *device.Error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*s.timeout)
	defer cancel()
	var accounts []store.AccountView
	n, truncated := 0, false
	for _, a := range s.fleet.Accounts {
		av := store.AccountView{ID: a.ID, Gateways: []store.GatewayView{}}
		for _, g := range a.Gateways {
			gv := store.GatewayView{MAC: g.MAC, Devices: []store.DeviceView{}}
			pipe := s.rdb.Pipeline()
			var cmds []*redis.MapStringStringCmd
			var types []*device.Type
			for _, d := range g.Devices {
				if maxDevices > 0 && n >= maxDevices {
					truncated = true
					break
				}
				t, _ := device.LookupType(d.Type)
				types = append(types, t)
				cmds = append(cmds, pipe.HGetAll(ctx, s.devKey(a.ID, g.MAC, d.SN)))
				n++
			}
			lr := pipe.LRange(ctx, s.msgKey(a.ID, g.MAC), 0, -1)
			tc := pipe.Get(ctx, s.totalKey(a.ID, g.MAC))
			if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
				return nil, false, unavailable(err)
			}
			for i, c := range cmds {
				gv.Devices = append(gv.Devices, view(types[i], g.Devices[i].SN, c.Val()))
			}
			gv.Messages = decodeMessages(lr.Val())
			gv.MessagesTotal, _ = strconv.ParseUint(tc.Val(), 10, 64)
			av.Gateways = append(av.Gateways, gv)
		}
		accounts = append(accounts, av)
	}
	return accounts, truncated, nil
}

// Reset puts every device back as the fleet has it and empties the
// message logs, for every replica.
func (s *Store) Reset() *device.Error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*60*s.timeout)
	defer cancel()
	if have, err := s.rdb.HGet(ctx, s.key("meta"), "fleet").Result(); err == nil && have != s.hash {
		return device.Errorf(device.CodeStorageUnavailable, "", "the shared store (Redis) holds another fleet: this replica does not reset it")
	} else if err != nil && !errors.Is(err, redis.Nil) {
		return unavailable(err)
	}
	pipe := s.rdb.Pipeline()
	n := 0
	for _, a := range s.fleet.Accounts {
		for _, g := range a.Gateways {
			pipe.Unlink(ctx, s.msgKey(a.ID, g.MAC), s.totalKey(a.ID, g.MAC))
			if n++; n == loadBatch {
				if _, err := pipe.Exec(ctx); err != nil {
					return unavailable(err)
				}
				n = 0
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return unavailable(err)
	}
	if err := s.writeFleet(ctx, nil); err != nil {
		return unavailable(err)
	}
	// Last, so that a Redis that lost its data holds the fleet again only
	// once every device is back: this is also the way back from that.
	// With DurabilityReplicated, WAIT on the connection of this last
	// write: a replica that has it has every write before it (one
	// replication stream, in order).
	confirmed, err := s.pipelineWait(ctx, s.wait, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.key("meta"), "fleet", s.hash, "loaded_at", time.Now().UTC().Format(time.RFC3339))
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	if !confirmed {
		return s.notReplicated()
	}
	return nil
}
