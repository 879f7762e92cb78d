package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

const signUsage = `Usage: gwconform sign [--fleet FILE] < body > signed-body

Reads a request body (JSON or XML) on stdin and writes it on stdout with a
fresh timestamp and sign, computed with the fleet's credentials: an api_key
written as <API_KEY> becomes the first key of the body's myservice_id. The
curl line of every check in gwconform's reports pipes its body through it,
so a pasted line works at any time:

  printf '%s' '{"control":{...,"sign":"<SIGNATURE>",...}}' | gwconform sign | curl ... --data-binary @- URL

The fleet comes from --fleet, else $GWCONFORM_FLEET, else the demo fleet.
Nothing but the body is written: never the secret.

A check that makes a part of its request wrong on purpose keeps it wrong in
its line, by these flags: --sign-at POSITION:DIGIT (the fresh sign with one
character changed), --sign-as SIGN (a sign of no key, written as it is),
--timestamp-offset D (the clock D away: -24h0m0s is a day old),
--keep-timestamp (the timestamp as written), --api-key-as KEY (a key of no
account, signed with the secret of the account's first key).

Flags:
`

// resigner is the fleet that signs afresh (from path, else
// $GWCONFORM_FLEET, else the demo fleet) and its signer for client.Resign:
// nil for md5, which Resign does with the secret of the body's api_key.
func resigner(path string) (*fleet.Fleet, client.Signer, error) {
	if path == "" {
		path = os.Getenv("GWCONFORM_FLEET")
	}
	f := fleet.Demo()
	if path != "" {
		var err error
		if f, err = fleet.Load(path); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case len(f.SignCommand) > 0:
		s, _ := catalog.SignerFor(f, path)
		return f, s, nil
	case f.Scheme() != auth.MD5:
		return f, client.FormatSigner{}, nil
	}
	return f, nil, nil
}

// signMain is gwconform sign.
func signMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gwconform sign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fleetFile := fs.String("fleet", "", "fleet file with the credentials (default: from $GWCONFORM_FLEET, else the demo fleet)")
	var t client.Tamper
	signAt := fs.String("sign-at", "", "POSITION:DIGIT: the fresh sign with its character at POSITION (from 1) changed to DIGIT")
	fs.StringVar(&t.Sign, "sign-as", "", "write this sign as it is (a sign of no key)")
	fs.DurationVar(&t.Offset, "timestamp-offset", 0, "the timestamp is the clock this far away (negative: in the past)")
	fs.BoolVar(&t.KeepTimestamp, "keep-timestamp", false, "keep the timestamp as written")
	fs.StringVar(&t.APIKey, "api-key-as", "", "send this api_key of no account, signed with the secret of the account's first key")
	fs.Usage = func() { io.WriteString(stderr, signUsage); fs.PrintDefaults() }
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return report.ExitPass
		}
		return report.ExitConfig
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gwconform sign: unexpected argument %q; the body comes on stdin\n", fs.Arg(0))
		return report.ExitConfig
	}
	if *signAt != "" {
		var err error
		if t.SignAt, t.SignTo, err = client.ParseSignAt(*signAt); err != nil {
			fmt.Fprintln(stderr, "gwconform sign:", err)
			return report.ExitConfig
		}
	}
	if t.Sign != "" && t.SignAt > 0 {
		fmt.Fprintln(stderr, "gwconform sign: --sign-at and --sign-as exclude each other")
		return report.ExitConfig
	}
	f, signer, err := resigner(*fleetFile)
	if err != nil {
		fmt.Fprintln(stderr, "gwconform sign: fleet:", err)
		return report.ExitConfig
	}
	body, err := io.ReadAll(io.LimitReader(stdin, 1<<20+1))
	if err != nil || len(body) > 1<<20 {
		fmt.Fprintln(stderr, "gwconform sign: the body on stdin must be at most 1 MiB")
		return report.ExitConfig
	}
	tp := &t
	if t == (client.Tamper{}) {
		tp = nil
	}
	out, err := client.ResignTampered(ctx, body, f, signer, time.Now(), f.Location(), tp)
	if err != nil {
		fmt.Fprintln(stderr, "gwconform sign:", err)
		return report.ExitConfig
	}
	stdout.Write(out)
	return report.ExitPass
}
