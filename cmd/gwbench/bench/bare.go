package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// The success bodies are gwsim's own.
var (
	successJSON = codec.Success(device.JSON)
	successXML  = codec.Success(device.XML)
)

// BareHandler answers every request with gwsim's success body in the
// request's format and does nothing else: it does not even read the body.
// It is the ceiling that gwsim's throughput is compared with.
func BareHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Content-Type"), "xml") {
			w.Header().Set("Content-Type", codec.ContentType(device.XML))
			w.Write(successXML)
			return
		}
		w.Header().Set("Content-Type", codec.ContentType(device.JSON))
		w.Write(successJSON)
	})
}

// ServeBare serves BareHandler on addr until ctx is done, with the
// http.Server settings gwsim uses, so that the comparison isolates the
// handler's work. It writes "bare listening on URL" to out once listening.
func ServeBare(ctx context.Context, addr string, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           BareHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	fmt.Fprintf(out, "bare listening on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
