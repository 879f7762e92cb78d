package redisstore

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/simulator/server"
)

// Feed is the dashboard's event feed shared by every replica
// (server.Changes), over Redis pub/sub on the channel PREFIX events. Each
// replica delivers its own changes to its own subscribers at once, and
// sends them to the channel only while another replica has a dashboard
// open: a replica with subscribers says so on the channel ({"watch":
// REPLICA}) when the first one comes and every second after, so that a
// request costs nothing extra while nobody watches elsewhere. Each replica
// delivers the channel's changes of the other replicas to its
// subscribers. Changes are best effort, like the in-memory Hub's: a change
// that finds the queue full, or Redis unreachable, is dropped (the page
// reloads its data on the next one anyway).
type Feed struct {
	s   *Store
	hub *server.Hub
	// othersUntil is until when (unix ms) another replica is known to
	// have a dashboard open.
	othersUntil atomic.Int64
	out         chan []byte
	ps          *redis.PubSub
	stop        chan struct{}
	wg          sync.WaitGroup
	closeOnce   sync.Once
}

// watchEvery is how often a replica with a dashboard open says so;
// watchTTL is how long the others believe it.
const (
	watchEvery = time.Second
	watchTTL   = 3 * watchEvery
	feedQueue  = 4096
)

// feedMessage is one message of the channel: a change, or a watch
// announcement.
type feedMessage struct {
	server.Change
	Watch string `json:"watch,omitempty"`
}

// Feed is the store's shared event feed; it runs until the store is
// closed.
func (s *Store) Feed() *Feed {
	s.feedOnce.Do(func() { s.feed = newFeed(s) })
	return s.feed
}

func newFeed(s *Store) *Feed {
	f := &Feed{s: s, hub: server.NewHub(), out: make(chan []byte, feedQueue), stop: make(chan struct{})}
	f.ps = s.rdb.Subscribe(context.Background(), f.channel())
	f.wg.Add(3)
	go f.receive()
	go f.send()
	go f.announce()
	return f
}

func (f *Feed) channel() string { return f.s.key("events") }

// Publish implements server.Changes: to this replica's subscribers at
// once, to the others' through Redis while any of them watches.
func (f *Feed) Publish(c server.Change) {
	if c.Replica == "" {
		c.Replica = f.s.replica
	}
	f.hub.Publish(c)
	if f.othersUntil.Load() < time.Now().UnixMilli() {
		return
	}
	b, err := json.Marshal(feedMessage{Change: c})
	if err != nil {
		return
	}
	select {
	case f.out <- b:
	default: // full: dropped, as a slow subscriber's are
	}
}

// Watched implements server.Changes: a subscriber here, or on another
// replica.
func (f *Feed) Watched() bool {
	return f.hub.Watched() || f.othersUntil.Load() >= time.Now().UnixMilli()
}

// Subscribe implements server.Changes. It tells the other replicas at
// once, so that their next change comes here too.
func (f *Feed) Subscribe() (<-chan server.Change, func()) {
	ch, cancel := f.hub.Subscribe()
	f.sayWatching()
	return ch, cancel
}

func (f *Feed) sayWatching() {
	b, _ := json.Marshal(feedMessage{Watch: f.s.replica})
	ctx, cancel := f.s.ctx()
	defer cancel()
	f.s.rdb.Publish(ctx, f.channel(), b)
}

// receive delivers the other replicas' changes to this one's subscribers.
func (f *Feed) receive() {
	defer f.wg.Done()
	ch := f.ps.Channel(redis.WithChannelSize(feedQueue))
	for {
		select {
		case <-f.stop:
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			var fm feedMessage
			if json.Unmarshal([]byte(m.Payload), &fm) != nil {
				continue
			}
			switch {
			case fm.Watch != "":
				if fm.Watch != f.s.replica {
					f.othersUntil.Store(time.Now().Add(watchTTL).UnixMilli())
				}
			case fm.Replica != f.s.replica && fm.Kind != "":
				f.hub.Publish(fm.Change)
			}
		}
	}
}

// send writes the queued changes to the channel in pipelines.
func (f *Feed) send() {
	defer f.wg.Done()
	batch := make([][]byte, 0, 256)
	for {
		select {
		case <-f.stop:
			return
		case b := <-f.out:
			batch = append(batch[:0], b)
		more:
			for len(batch) < cap(batch) {
				select {
				case b := <-f.out:
					batch = append(batch, b)
				default:
					break more
				}
			}
			ctx, cancel := f.s.ctx()
			f.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, b := range batch {
					p.Publish(ctx, f.channel(), b)
				}
				return nil
			})
			cancel()
		}
	}
}

// announce says every watchEvery that this replica watches, while it does.
func (f *Feed) announce() {
	defer f.wg.Done()
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			if f.hub.Watched() {
				f.sayWatching()
			}
		}
	}
}

func (f *Feed) close() {
	f.closeOnce.Do(func() {
		close(f.stop)
		f.ps.Close()
		f.wg.Wait()
	})
}

// Subscribers is the number of this replica's open event streams (the
// metrics' event clients).
func (f *Feed) Subscribers() int { return f.hub.Subscribers() }
