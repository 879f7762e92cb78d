package client

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Signer computes the sign of a request, so that the client can sign
// exactly what it sends, including requests a check has altered.
type Signer interface {
	// Sign is given the control fields about to be sent, in order and
	// without the sign field itself.
	Sign(ctx context.Context, fields []Field) (string, error)
}

// MD5Signer signs by the md5 scheme of CONTRACT section 1 over the api_key
// and timestamp values in the fields, as sent (not trimmed), so that a check
// that alters either still sends the sign of what it sent.
type MD5Signer struct {
	// APIKey is used when the fields carry no api_key, so that a request
	// missing its key still carries a well-formed sign.
	APIKey string
	Secret string
}

// Sign implements Signer.
func (s MD5Signer) Sign(_ context.Context, fields []Field) (string, error) {
	key, ok := lookup(fields, device.FieldAPIKey)
	if !ok {
		key = s.APIKey
	}
	ts, _ := lookup(fields, device.FieldTimestamp)
	sign := auth.Sign(key, s.Secret, ts)
	rememberSign(sign)
	return sign, nil
}

// lookup is the text of the first field named key.
func lookup(fields []Field, key string) (string, bool) {
	for _, f := range fields {
		if f.Key == key {
			t, err := valueText(f.Value)
			return t, err == nil
		}
	}
	return "", false
}

// FormatSigner makes a well-formed sign (32 hex: the md5 of the fields) for
// targets whose scheme is "format" or "off": they check the sign's form or
// nothing, and the harness still sends a valid envelope.
type FormatSigner struct{}

// Sign implements Signer.
func (FormatSigner) Sign(_ context.Context, fields []Field) (string, error) {
	b, err := jsonObject(fields)
	if err != nil {
		return "", err
	}
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:]), nil
}

// DefaultSignWait bounds one run of a sign command when
// CommandSigner.Timeout is zero; a sign script that hangs must not hang the
// whole run.
const DefaultSignWait = 5 * time.Second

// Limits of a sign command's output: a sign is short, and a runaway command
// must not fill memory or a report.
const (
	maxSignOutput  = 4 << 10
	maxStderrQuote = 512
)

// CommandSigner runs the fleet's sign_command (CONTRACT section 5) for
// schemes the harness cannot compute itself: the control fields go to its
// stdin as one JSON object in send order, and the sign is read from its
// stdout with surrounding white space removed.
type CommandSigner struct {
	// Argv is the program and its arguments; it is run without a shell.
	Argv []string
	// Timeout bounds one run; DefaultSignWait when zero.
	Timeout time.Duration
}

// Sign implements Signer.
func (s CommandSigner) Sign(ctx context.Context, fields []Field) (string, error) {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return "", errors.New("sign command: no program given")
	}
	in, err := jsonObject(fields)
	if err != nil {
		return "", fmt.Errorf("sign command: %w", err)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultSignWait
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Argv[0], s.Argv[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	stdout := &capWriter{max: maxSignOutput}
	stderr := &capWriter{max: maxStderrQuote}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A killed shell may leave children holding the pipes open; WaitDelay
	// stops Wait from waiting for them.
	cmd.WaitDelay = time.Second
	ownGroup(cmd)
	name := strings.Join(s.Argv, " ")
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return "", fmt.Errorf("sign command %q did not finish within %s%s", name, timeout, stderr.quote())
	}
	if err != nil {
		return "", fmt.Errorf("sign command %q: %v%s", name, err, stderr.quote())
	}
	if stdout.cut {
		return "", fmt.Errorf("sign command %q wrote more than %d bytes; it must write only the sign", name, maxSignOutput)
	}
	sign := strings.TrimSpace(stdout.b.String())
	if sign == "" {
		return "", fmt.Errorf("sign command %q wrote no sign on stdout%s", name, stderr.quote())
	}
	if strings.ContainsAny(sign, "\r\n") {
		return "", fmt.Errorf("sign command %q wrote more than one line; it must write only the sign", name)
	}
	rememberSign(sign)
	return sign, nil
}

// capWriter keeps the first max bytes written and drops the rest, so that
// the command never blocks on a full pipe and never fills memory.
type capWriter struct {
	b   bytes.Buffer
	max int
	cut bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - w.b.Len(); room < len(p) {
		w.cut = true
		if room > 0 {
			w.b.Write(p[:room])
		}
		return len(p), nil
	}
	return w.b.Write(p)
}

// quote is the captured stderr as a suffix of an error message.
func (w *capWriter) quote() string {
	s := strings.TrimSpace(strings.ToValidUTF8(w.b.String(), "?"))
	if s == "" {
		return ""
	}
	if w.cut {
		s += " …"
	}
	return "; stderr: " + s
}
