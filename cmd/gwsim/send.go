package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
	"github.com/gwdmi/gwtools/simulator/send"
)

const sendUsage = `Usage:
  gwsim send command --type TYPE [--sn SN] FIELD=VALUE...   e.g. --type "Light Dimmer" dimming=40
  gwsim send message [--type MESSAGE_TYPE] SETTING=NUMBER    e.g. brightness=80 (type: message)
  gwsim send rename --sn SN --name NAME

Sends one signed request to --target (default: $GWSIM_URL, else
http://127.0.0.1:8080) and prints the exchange (the sign is shown as
<SIGNATURE>). It sends no retry unless asked: with --retries N, an answer
429 or 503 with Retry-After is waited out and the request sent again,
signed afresh, up to N times, each retry said and its exchange printed. Credentials: the first account, key and gateway of
--fleet (default: the built-in demo fleet), each replaced by its flag when
given. The secret comes from --secret-file, the environment variable
GWSIM_SECRET, or --secret (visible to other users in the process list).
Without --sn, a command goes to the fleet's first device of its type.
Flags may come anywhere: before the operation, between the fields, after.
Exit 0: the target answered 200 success; 1: it answered an error or did
not answer; 2: bad usage or an unreadable fleet.

Flags:
`

// sendMain is gwsim send: its flags, then one exchange.
type sendMain struct {
	Stdout, Stderr io.Writer

	op                          device.Operation
	target, format, fleetFile   string
	apiKey, secret, secretFile  string
	account, mac, typ, sn, name string
	timeout                     time.Duration
	retries                     int
	positional                  []string
	checkOnly                   bool
	cred                        send.Credentials
	req                         send.Request
}

var sendOps = map[string]device.Operation{"command": device.SendCommand, "message": device.SendMessage,
	"rename": device.UpdateName, "update_name": device.UpdateName}

// ParseFlags reads the operation, flags and fields (flags in any
// position), loads the fleet and builds the request, without sending it.
func (m *sendMain) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("gwsim send", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, sendUsage); fs.PrintDefaults() }
	fs.StringVar(&m.target, "target", "", "base URL of the implementation (default: $GWSIM_URL, else "+defaultTarget+")")
	fs.StringVar(&m.format, "format", "json", "body format: json or xml")
	fs.StringVar(&m.fleetFile, "fleet", "", "fleet file with the credentials (default: the built-in demo fleet)")
	fs.StringVar(&m.apiKey, "api-key", "", "api_key (default: the fleet's first key)")
	fs.StringVar(&m.secret, "secret", "", "the key's secret; prefer --secret-file or GWSIM_SECRET (default: the fleet's)")
	fs.StringVar(&m.secretFile, "secret-file", "", "read the secret from this file (its first line)")
	fs.StringVar(&m.account, "myservice-id", "", "myservice_id (default: the fleet's first account with a key)")
	fs.StringVar(&m.mac, "mac", "", "gateway mac (default: the account's first gateway)")
	fs.StringVar(&m.typ, "type", "", "command: the device type; message: the message_type (default message)")
	fs.StringVar(&m.sn, "sn", "", "device serial number (command, rename)")
	fs.StringVar(&m.name, "name", "", "rename: the new display name")
	fs.DurationVar(&m.timeout, "timeout", 10*time.Second, "time limit of the exchange")
	fs.IntVar(&m.retries, "retries", 0, "send again, up to `N` times, a request answered 429 or 503 with Retry-After once the wait is over (default: none)")
	fs.Bool("version", false, "print the version and exit")
	// Flags go anywhere: before the operation, between the fields or after
	// them (gwsim send --target URL command --type T f=v), as in every
	// other subcommand. The first argument that is no flag is the operation.
	var args2 []string
	rest := args
	for {
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		args2 = append(args2, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(args2) == 0 {
		return errors.New("name the operation: command, message or rename")
	}
	op, ok := sendOps[args2[0]]
	if !ok {
		hint := ""
		if s := suggest(args2[0], []string{"command", "message", "rename"}); s != "" {
			hint = ", did you mean " + s + "?"
		}
		return fmt.Errorf("unknown operation %q%s (command, message or rename)", args2[0], hint)
	}
	m.op = op
	m.positional = append(m.positional, args2[1:]...)
	target, from := targetOf(m.target)
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q must be a URL such as http://127.0.0.1:8080", from, target)
	}
	m.target = target
	format, ok := device.ParseFormat(m.format)
	if !ok {
		return fmt.Errorf("--format: %q is not json or xml", m.format)
	}
	if m.retries < 0 || m.retries > send.MaxRetries {
		return fmt.Errorf("--retries must be from 0 to %d, not %d", send.MaxRetries, m.retries)
	}
	if m.checkOnly {
		// The fleet file and the secret are the deployment's, not here.
		m.cred.APIKey = "checked"
	} else if err := m.credentials(); err != nil {
		return err
	}
	m.req = send.Request{Op: m.op, Format: format, SN: m.sn}
	switch m.op {
	case device.SendCommand:
		m.req.Type = m.typ
		if _, ok := device.LookupType(m.typ); !ok && m.typ != "" {
			// Sent anyway: the target's answer to an unknown type is what
			// some users want to see. Said here so that a typo is plain.
			fmt.Fprintf(m.Stderr, "gwsim send: note: %q is not a published type (%s)\n", m.typ, strings.Join(device.TypeNames(), ", "))
		}
		for _, p := range m.positional {
			s, err := send.ParseSetting(p)
			if err != nil {
				return err
			}
			m.req.Settings = append(m.req.Settings, s)
		}
	case device.SendMessage:
		m.req.MessageType = m.typ
		if m.req.MessageType == "" {
			m.req.MessageType = "message"
		}
		if len(m.positional) != 1 {
			return errors.New("send message takes exactly one SETTING=NUMBER, e.g. brightness=80")
		}
		m.req.MessageValue = m.positional[0]
	case device.UpdateName:
		if len(m.positional) > 0 {
			return fmt.Errorf("send rename: unexpected argument %q (the name goes in --name)", m.positional[0])
		}
		m.req.Name = m.name
	}
	if m.op != device.SendCommand && m.op != device.SendMessage && m.typ != "" {
		return errors.New("send rename takes no --type")
	}
	if m.checkOnly && m.req.Op == device.SendCommand && m.req.SN == "" {
		m.req.SN = "from the fleet"
	}
	return m.req.Check()
}

// credentials takes the fleet's and replaces each by its flag.
func (m *sendMain) credentials() error {
	f := fleet.Demo()
	if m.fleetFile != "" {
		var err error
		if f, err = fleet.Load(m.fleetFile); err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
	}
	cred, t, err := send.FromFleet(f)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	secret := ""
	switch {
	case m.secretFile != "":
		b, err := safefile.ReadFile(m.secretFile, safefile.MaxSecret)
		if err != nil {
			return fmt.Errorf("--secret-file: %w", err)
		}
		secret, _, _ = strings.Cut(string(b), "\n")
		secret = strings.TrimRight(secret, "\r")
		if secret == "" {
			return fmt.Errorf("--secret-file %s: the first line is empty", m.secretFile)
		}
	case m.secret != "":
		secret = m.secret
	case os.Getenv("GWSIM_SECRET") != "":
		secret = os.Getenv("GWSIM_SECRET")
	}
	if m.apiKey != "" && m.apiKey != cred.APIKey {
		if secret == "" {
			return errors.New("--api-key given without its secret: use --secret-file, GWSIM_SECRET or --secret")
		}
		cred.APIKey = m.apiKey
	}
	if secret != "" {
		cred.Secret = secret
	}
	if m.account != "" {
		cred.AccountID = m.account
	}
	if m.mac != "" {
		cred.MAC = m.mac
	}
	if m.op == device.SendCommand && m.sn == "" && strings.EqualFold(cred.MAC, t.MAC) {
		if d, ok := t.Devices[m.typ]; ok {
			m.sn = d.SN
		}
	}
	m.cred = cred
	return nil
}

// Run sends the request: 0 success, 1 an error answer or none.
func (m *sendMain) Run(ctx context.Context) int {
	res, err := send.Send(ctx, send.Options{Target: m.target, Timeout: m.timeout, Retries: m.retries}, m.cred, m.req, m.Stdout)
	if err != nil {
		fmt.Fprintln(m.Stderr, "gwsim send:", err)
		return 1
	}
	if !res.OK {
		if r := res.Response; r != nil && r.ErrorCode != "" {
			fmt.Fprintf(m.Stderr, "gwsim send: the target answered %d %s\n", r.Status, printable.String(r.ErrorCode))
		} else {
			fmt.Fprintf(m.Stderr, "gwsim send: the target answered %d without status success\n", res.Exchange.Status)
		}
		return 1
	}
	return 0
}

func sendCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	m := &sendMain{Stdout: stdout, Stderr: stderr}
	if err := m.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "gwsim send:", err)
		return 2
	}
	return m.Run(ctx)
}
