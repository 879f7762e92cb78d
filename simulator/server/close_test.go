package server_test

import (
	"bufio"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
	"github.com/gwdmi/gwtools/simulator/store"
)

// TestCloseDoesNotWaitForUnusedConnections: an HTTP client's pool may hold
// a connection it dialed and never sent a request on; net/http's Shutdown
// waits 5 s before it counts such a connection idle, which kept every
// gwconform run against its embedded gwsim 5 s longer now and then. Close
// closes it once it has had a moment to start a request; a request in
// flight on another connection still gets its answer.
func TestCloseDoesNotWaitForUnusedConnections(t *testing.T) {
	f := simtest.Fleet()
	s := server.New(server.Config{Store: store.New(f, 0), Auth: f.Authenticator(), Logger: slog.New(slog.DiscardHandler), ShutdownTimeout: 30 * time.Second})
	if err := s.Open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	unused, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer unused.Close()
	// A connection that has sent a request: Close waits for its answer.
	busy, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if _, err := busy.Write([]byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	answer, err := bufio.NewReader(busy).ReadString('\n')
	if err != nil || !strings.HasPrefix(answer, "HTTP/1.1 ") {
		t.Fatalf("the busy connection's answer: %q %v", answer, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("Close still waits after 4 s: it waits for the connection that sent nothing")
	}
	unused.SetReadDeadline(time.Now().Add(time.Second))
	if n, err := unused.Read(make([]byte, 1)); err == nil {
		t.Errorf("the unused connection is still open after Close (read %d bytes)", n)
	}
}
