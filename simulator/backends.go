package simulator

import (
	"errors"
	"strings"

	"github.com/gwdmi/gwtools/simulator/persist"
	"github.com/gwdmi/gwtools/simulator/redisstore"
	"github.com/gwdmi/gwtools/simulator/server"
)

// ErrNotStoreURL: a --store value names no backend.
var ErrNotStoreURL = errors.New("not a store URL")

// StoreForms lists the --store URLs Backend knows, for messages.
const StoreForms = "memory:, file:PATH, redis://HOST:PORT/DB (rediss:// for TLS) or redis+sentinel://HOST:PORT[,HOST:PORT…]/MASTER[/DB]"

// Backend finds the backend a --store URL names, by its scheme: the one
// place that maps a URL to a backend ("" is memory:). A new backend is one
// file implementing server.OpenBackend and one case here (and its form in
// StoreForms).
func Backend(url string) (server.OpenBackend, error) {
	switch {
	case url == "" || url == "memory:":
		return server.OpenMemory, nil
	case strings.HasPrefix(url, persist.Scheme):
		return persist.OpenBackend, nil
	case redisstore.IsURL(url):
		return redisstore.OpenBackend, nil
	}
	return nil, ErrNotStoreURL
}
