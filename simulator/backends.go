package simulator

import (
	"errors"
	"strings"

	"github.com/gwdmi/gwtools/simulator/internal/persist"
	"github.com/gwdmi/gwtools/simulator/redisstore"
	"github.com/gwdmi/gwtools/simulator/server"
)

// ErrNotStoreURL: a --store value names no backend.
var ErrNotStoreURL = errors.New("not a store URL")

// stores are the backends gwsim knows, in the order messages list them:
// the one place that maps a --store URL to a backend. A new backend is
// one package implementing server.OpenBackend and one row here.
var stores = []struct {
	// form is how the URL is written, for messages.
	form  string
	match func(url string) bool
	open  server.OpenBackend
}{
	{"memory:", func(url string) bool { return url == "" || url == "memory:" }, server.OpenMemory},
	{"file:PATH", func(url string) bool { return strings.HasPrefix(url, persist.Scheme) }, persist.OpenBackend},
	{"redis://HOST:PORT/DB (rediss:// for TLS) or redis+sentinel://HOST:PORT[,HOST:PORT…]/MASTER[/DB]", redisstore.IsURL, redisstore.OpenBackend},
}

// StoreForms lists the --store URLs Backend knows, for messages.
var StoreForms = func() string {
	forms := make([]string, len(stores))
	for i, s := range stores {
		forms[i] = s.form
	}
	return strings.Join(forms, ", ")
}()

// Backend finds the backend a --store URL names, by its scheme ("" is
// memory:).
func Backend(url string) (server.OpenBackend, error) {
	for _, s := range stores {
		if s.match(url) {
			return s.open, nil
		}
	}
	return nil, ErrNotStoreURL
}
