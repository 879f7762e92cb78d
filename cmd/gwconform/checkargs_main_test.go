package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// checkArgs parses a whole gwconform command line (subcommand and flags,
// without the program name) as gwconform would, without running anything:
// the tests of deploy/ and docs/ keep every command line they give valid.
// It lives in a test file: the binaries carry none of it.
func checkArgs(args []string) error {
	if len(args) == 0 {
		return errors.New("no command")
	}
	switch args[0] {
	case "run":
		return checkRunArgs(args[1:])
	case "explore":
		m := &exploreMain{Stdout: io.Discard, Stderr: io.Discard}
		if err := m.ParseFlags(args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
			return err
		}
		return nil
	case "diff":
		m := &diffMain{Stdout: io.Discard, Stderr: io.Discard}
		if err := m.ParseFlags(args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
			return err
		}
		return nil
	case "load":
		var err error
		switch {
		case len(args) > 1 && args[1] == "merge":
			_, err = parseMergeFlags(args[2:], io.Discard)
		case len(args) > 1 && args[1] == "check-acks":
			_, err = parseCheckAcksFlags(args[2:], io.Discard)
		default:
			m := &loadMain{Stdout: io.Discard, Stderr: io.Discard}
			err = m.ParseFlags(args[1:])
		}
		if errors.Is(err, errUsage) {
			err = errors.New("bad flags")
		}
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			return fmt.Errorf("load: %w", err)
		}
		return nil
	case "checks", "sign", "verify", "keygen", "replay", "baseline", "-h", "--help", "help", "--version", "version":
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// checkRunArgs parses gwconform run's flags and checks them as ParseFlags
// does, but changes none of Ginkgo's settings and reads nothing: a
// recipe's $VARIABLE stands for a URL filled in where it runs, and a
// --product-file is read at run time.
func checkRunArgs(args []string) error {
	m := &runMain{Stdout: io.Discard, Stderr: io.Discard}
	fs := m.flagSet(func(v flag.Value) flag.Value { return discardValue{v} })
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o := &m.opts
	for _, u := range []*string{&o.Target, &o.Observer} {
		if strings.HasPrefix(*u, "$") {
			*u = "http://filled-in-where-it-runs.invalid"
		}
	}
	if err := o.check(); err != nil {
		return err
	}
	if o.ProductFile != "" {
		o.Cert.Product, o.Cert.ProductVersion = "from", "file" // read at run time
		o.ProductFile = ""
	}
	if o.Cert.SignKeyFile != "" {
		if o.Cert.Bundle == "" {
			return errors.New("--sign-key without --bundle")
		}
		o.Cert.SignKeyFile = "" // read at run time
	}
	return checkCert(o)
}

// discardValue parses like the flag it wraps but keeps nothing, so that
// checking a command line changes none of Ginkgo's settings.
type discardValue struct{ v flag.Value }

func (d discardValue) String() string { return d.v.String() }
func (d discardValue) Set(s string) error {
	if bf, ok := d.v.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
		_, err := strconv.ParseBool(s)
		return err
	}
	return nil
}
func (d discardValue) IsBoolFlag() bool {
	bf, ok := d.v.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}
