package simtest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Redis is a redis-server started for a test on a free loopback port with
// a temporary directory; it is stopped by its PID when the test ends.
type Redis struct {
	t       testing.TB
	Port    int
	Dir     string
	Durable bool
	// Args are more redis-server arguments (a Cluster node's, a
	// replica's).
	Args []string
	// Conf, when set, is the configuration file of a Sentinel
	// (redis-server CONF --sentinel).
	Conf string
	cmd  *exec.Cmd
}

// StartRedis starts redis-server. durable turns on the append-only file
// with appendfsync always, so that every write it acknowledged survives
// kill -9. When redis-server is missing the test skips with one line, or
// fails with CI=true (NeedTool): `make tools` installs it.
func StartRedis(t testing.TB, durable bool) *Redis {
	t.Helper()
	needRedisServer(t)
	r := &Redis{t: t, Dir: t.TempDir(), Durable: durable, Port: freePort(t)}
	r.Start()
	t.Cleanup(r.Kill)
	return r
}

// needRedisServer skips the test with one line when redis-server is not
// installed, or fails it under CI=true (NeedTool).
func needRedisServer(t testing.TB) {
	t.Helper()
	NeedTool(t, "redis-server", "apt-get install -y redis-server")
}

// Addr is host:port of the server.
func (r *Redis) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.Port) }

// freePort is a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// URL is the redis:// URL of database 0.
func (r *Redis) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.Port) }

// Start (re)starts redis-server on its port and directory and waits until
// it answers PING.
func (r *Redis) Start() {
	r.t.Helper()
	args := []string{"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1", "--dir", r.Dir, "--save", "",
		"--daemonize", "no", "--logfile", "redis.log", "--protected-mode", "yes"}
	if r.Durable {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	args = append(args, r.Args...)
	if r.Conf != "" {
		// A Sentinel: its configuration file first (it rewrites it), then
		// --sentinel; it takes no persistence flags.
		args = []string{r.Conf, "--sentinel", "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1", "--dir", r.Dir,
			"--daemonize", "no", "--logfile", "redis.log"}
	}
	r.cmd = exec.Command("redis-server", args...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("redis-server: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if r.ping() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(r.Dir + "/redis.log")
	r.t.Fatalf("redis-server did not answer PING on port %d: %s", r.Port, log)
}

func (r *Redis) ping() bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.Port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprint(c, "PING\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// Kill stops redis-server with SIGKILL (kill -9) by its PID and waits.
func (r *Redis) Kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
	r.cmd = nil
}
