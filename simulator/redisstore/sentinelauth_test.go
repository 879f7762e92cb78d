package redisstore_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/redisstore"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// A Sentinel password is for a redis+sentinel:// store only: with any
// other URL Open refuses it at once, naming what it is for, and the
// message shows neither it nor the URL's password.
func TestSentinelPasswordOnlyWithSentinel(t *testing.T) {
	for _, url := range []string{"redis://:data-s3cret@127.0.0.1:1/0", "rediss://u:data-s3cret@127.0.0.1:1/0", "redis://:data-s3cret@127.0.0.1:1?addr=127.0.0.1:2"} {
		_, err := redisstore.Open(t.Context(), fleet.Demo(), redisstore.Options{URL: url, SentinelPassword: "sentinel-s3cret"})
		if err == nil || !strings.Contains(err.Error(), "redis+sentinel://") || !strings.Contains(err.Error(), "GWSIM_SENTINEL_PASSWORD") ||
			strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s with a Sentinel password: %v (want a refusal naming redis+sentinel:// and GWSIM_SENTINEL_PASSWORD, without a password)", redisstore.Redact(url), err)
		}
	}
}

// Sentinels that require a password (requirepass): Open reaches the
// primary through them with Options.SentinelPassword, as OpenBackend does
// with server.BackendOptions.SentinelPassword, and no description holds it; without it, or
// with a wrong one, Open fails saying the Sentinels refused, and its error
// holds neither password.
func TestSentinelPasswordReachesTheSentinels(t *testing.T) {
	const password = "sentinel-Pass_0123.x~"
	r := simtest.StartRedis(t, false)
	sentinel := startSentinelWithPassword(t, r.Port, password)
	url := "redis+sentinel://" + sentinel + "/gwsim/0"

	s, err := redisstore.Open(t.Context(), fleet.Demo(), redisstore.Options{URL: url, SentinelPassword: password})
	if err != nil {
		t.Fatalf("with the Sentinels' password: %v", err)
	}
	if err := s.Client().Ping(t.Context()).Err(); err != nil {
		t.Errorf("PING through the Sentinels: %v", err)
	}
	s.Close()

	b, err := redisstore.OpenBackend(t.Context(), server.BackendOptions{URL: url, SentinelPassword: password, Fleet: fleet.Demo()})
	if err != nil {
		t.Fatalf("OpenBackend with the Sentinels' password: %v", err)
	}
	if strings.Contains(b.Describe, password) {
		t.Errorf("the backend's description holds the Sentinels' password: %s", b.Describe)
	}
	b.Close()

	for what, pw := range map[string]string{"without a password": "", "with a wrong password": "wrong-" + password} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := redisstore.Open(ctx, fleet.Demo(), redisstore.Options{URL: url, SentinelPassword: pw})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "cannot be reached") {
			t.Errorf("%s: %v (want the Sentinels' refusal)", what, err)
			continue
		}
		if strings.Contains(err.Error(), password) {
			t.Errorf("%s: the error holds the password: %v", what, err)
		}
		t.Logf("%s: %v", what, err)
	}

	// Each Sentinel's refusal (here one Sentinel named twice), in one
	// line.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = redisstore.Open(ctx, fleet.Demo(), redisstore.Options{URL: "redis+sentinel://" + sentinel + "," + sentinel + "/gwsim/0"})
	if err == nil || strings.Count(err.Error(), "NOAUTH") != 2 || strings.Contains(err.Error(), "\n") {
		t.Errorf("two Sentinels refusing: %q (want both refusals in one line)", err)
	}
}

// An error from a Sentinel never carries the Sentinels' password or the
// data nodes': a Sentinel that answers every command, AUTH included, with
// an error quoting it is shown with both replaced by ***.
func TestSentinelErrorNeverShowsThePassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go echoErrors(c)
		}
	}()
	const sentinelPw, dataPw = "sentinel-s3cret-0123", "data-s3cret-4567"
	url := "redis+sentinel://:" + dataPw + "@" + ln.Addr().String() + "/gwsim/0"
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = redisstore.Open(ctx, fleet.Demo(), redisstore.Options{URL: url, SentinelPassword: sentinelPw})
	if err == nil {
		t.Fatal("Open through a Sentinel that refuses everything succeeded")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "you sent") || !strings.Contains(err.Error(), "***") {
		t.Errorf("the Sentinel's own error is not in the message, or nothing was replaced: %v", err)
	}
	if strings.Contains(err.Error(), sentinelPw) || strings.Contains(err.Error(), dataPw) {
		t.Errorf("the error holds a password: %v", err)
	}
}

// echoErrors answers each RESP command on c with an error quoting it.
func echoErrors(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "*") {
			return
		}
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		var words []string
		for range n {
			if _, err := r.ReadString('\n'); err != nil { // $LEN
				return
			}
			w, err := r.ReadString('\n')
			if err != nil {
				return
			}
			words = append(words, strings.TrimSpace(w))
		}
		fmt.Fprintf(c, "-ERR you sent %s\r\n", strings.Join(words, " "))
	}
}

// startSentinelWithPassword starts one Sentinel (redis-server --sentinel)
// on a free loopback port that monitors the primary on primaryPort as
// gwsim (quorum 1) and requires password, and returns its address.
func startSentinelWithPassword(t *testing.T, primaryPort int, password string) string {
	t.Helper()
	simtest.NeedTool(t, "redis-server", "apt-get install -y redis-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("sentinel monitor gwsim 127.0.0.1 %d 1\nrequirepass %s\n", primaryPort, password)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--daemonize", "no", "--logfile", "sentinel.log")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, Password: password})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.GetMasterAddrByName(t.Context(), "gwsim").Result(); err == nil {
			return addr
		} else if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
			t.Fatalf("the Sentinel on %s does not answer: %v\n%s", addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
