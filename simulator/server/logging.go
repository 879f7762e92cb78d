package server

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// DefaultSummaryEvery is how often the server logs a summary of the
// requests it answered, when Config.SummaryEvery is 0.
const DefaultSummaryEvery = time.Minute

// accessLog decides, once in New, whether a request gets a log line of its
// own and at which level: with Config.AccessLog at info (warn for a 5xx),
// else at debug when the logger takes debug, else never. When off, a
// request costs the log nothing: no attributes built, no allocation.
type accessLog struct {
	on    bool
	level slog.Level // the level of a 2xx-4xx line
}

func newAccessLog(cfg Config, log *slog.Logger) accessLog {
	switch {
	case cfg.AccessLog:
		return accessLog{on: true, level: slog.LevelInfo}
	case log.Enabled(context.Background(), slog.LevelDebug):
		return accessLog{on: true, level: slog.LevelDebug}
	}
	return accessLog{}
}

// counters are the requests answered, by class of status, for the
// summary line; one atomic add a request.
type counters struct {
	ok, client, server atomic.Uint64
}

func (c *counters) count(status int) {
	switch {
	case status >= 500:
		c.server.Add(1)
	case status >= 400:
		c.client.Add(1)
	default:
		c.ok.Add(1)
	}
}

func (c *counters) load() (ok, client, server uint64) {
	return c.ok.Load(), c.client.Load(), c.server.Load()
}

// summarize logs, every interval until stop is closed, one line with the
// requests answered since the last line: how many, the rate, and how many
// by class of status. An idle interval writes nothing.
func (s *Server) summarize(every time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	var lastOK, lastClient, lastServer uint64
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			ok, client, server := s.counts.load()
			n := (ok - lastOK) + (client - lastClient) + (server - lastServer)
			if n > 0 {
				secs := now.Sub(last).Seconds()
				s.log.Info("summary", "interval", now.Sub(last).Round(time.Millisecond).String(), "requests", n,
					"per_second", int64(float64(n)/secs+0.5), "ok", ok-lastOK, "client_errors", client-lastClient,
					"server_errors", server-lastServer, "total", ok+client+server)
			}
			lastOK, lastClient, lastServer, last = ok, client, server, now
		}
	}
}

// logRequest writes a request's own line, when the access log is on. It
// never logs the sign, the api_key's secret or the body.
func (s *Server) logRequest(r *http.Request, ent *Entry, e *device.Error) {
	level := s.access.level
	if ent.Status >= 500 {
		level = max(level, slog.LevelWarn)
	}
	attrs := make([]slog.Attr, 0, 11)
	attrs = append(attrs, slog.String("method", ent.Method), slog.String("path", ent.Path), slog.Int("status", ent.Status),
		slog.Int64("duration_us", ent.DurationUS), slog.String("remote", r.RemoteAddr))
	if ent.Format != "" {
		attrs = append(attrs, slog.String("format", ent.Format))
	}
	if ent.MAC != "" {
		attrs = append(attrs, slog.String("mac", ent.MAC))
	}
	if ent.SN != "" {
		attrs = append(attrs, slog.String("sn", ent.SN))
	}
	if e != nil {
		attrs = append(attrs, slog.String("error_code", e.Code), slog.String("error_field", e.Field))
	}
	s.log.LogAttrs(r.Context(), level, "request", attrs...)
}
