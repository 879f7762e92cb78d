package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// checkArgs parses a whole gwsim command line (subcommand and flags,
// without the program name) as gwsim would, and returns the error it would
// report, without running anything: no listener, no fleet file or state
// file opened, nothing sent. Tests of the recipes and manifests in docs/
// and deploy/ call it, so that a flag renamed here fails them.
func checkArgs(args []string) error {
	if len(args) == 0 {
		return errors.New("no command")
	}
	var stderr bytes.Buffer
	wrap := func(err error) error {
		if err == nil || errors.Is(err, flag.ErrHelp) {
			return nil
		}
		if msg := strings.TrimSpace(stderr.String()); msg != "" && !strings.Contains(msg, err.Error()) {
			return fmt.Errorf("%w (%s)", err, firstLine(msg))
		}
		return err
	}
	if wantsVersion(args[1:]) {
		return nil
	}
	switch args[0] {
	case "serve":
		m := &Main{Stdout: io.Discard, Stderr: &stderr, checkOnly: true}
		return wrap(m.ParseFlags(args[1:]))
	case "fleet":
		if code := fleetRun(args[1:], io.Discard, &stderr, true); code != 0 {
			return fmt.Errorf("gwsim fleet: exit %d: %s", code, firstLine(stderr.String()))
		}
		return nil
	case "send":
		m := &sendMain{Stdout: io.Discard, Stderr: &stderr, checkOnly: true}
		return wrap(m.ParseFlags(args[1:]))
	case "clients":
		m := &clientsMain{Stdout: io.Discard, Stderr: &stderr}
		return wrap(m.ParseFlags(args[1:]))
	case "proxy":
		m := &proxyMain{Stdout: io.Discard, Stderr: &stderr, checkOnly: true}
		return wrap(m.ParseFlags(args[1:]))
	case "openapi":
		if len(args) > 1 && args[1] != "-h" && args[1] != "--help" {
			return fmt.Errorf("gwsim openapi: unexpected argument %q", args[1])
		}
		return nil
	case "-h", "--help", "help", "version", "--version", "-version":
		return nil
	}
	return errors.New(unknownCommand(args[0]))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
