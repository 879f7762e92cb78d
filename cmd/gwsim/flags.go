package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/redisstore"
)

// commands are gwsim's subcommands, in the order the usage lists them.
var commands = []string{"serve", "fleet", "send", "openapi", "clients", "proxy", "version", "help"}

// parseFlags parses args with fs and prints nothing itself but the usage
// for -h (fs.Usage, or the flag defaults), after which it returns
// flag.ErrHelp. Any other mistake comes back as one line naming the flag:
// an unknown flag with the closest known one ("did you mean --addr?"),
// never followed by the whole usage text.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if err == nil {
		return nil
	}
	if errors.Is(err, flag.ErrHelp) {
		if usage != nil {
			usage()
		} else {
			fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
		return flag.ErrHelp
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimPrefix(name, "-")
		var known []string
		fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
		hint := ""
		if s := suggest(name, known); s != "" {
			hint = ", did you mean --" + s + "?"
		}
		return fmt.Errorf("unknown flag --%s%s (%s -h lists the flags)", name, hint, fs.Name())
	}
	// "invalid value "x" for flag -rate-limit: parse error",
	// "flag needs an argument: -addr": the flag as the docs write it.
	msg = strings.Replace(msg, "flag -", "flag --", 1)
	msg = strings.Replace(msg, "argument: -", "argument: --", 1)
	return errors.New(msg)
}

// suggest returns the candidate closest to word when it is close enough
// to be a slip of the keyboard (a prefix of it, or at most a third of its
// letters off), else "".
func suggest(word string, candidates []string) string {
	word = strings.ToLower(word)
	best, bestD := "", -1
	for _, c := range candidates {
		d := distance(word, strings.ToLower(c))
		if len(word) >= 3 && strings.HasPrefix(c, word) {
			d = min(d, 1)
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(1, (len(word)+2)/3) {
		return ""
	}
	return best
}

// distance is the Damerau-Levenshtein (optimal string alignment) distance:
// a swapped pair of letters counts once.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// unknownCommand is the one line for a mistyped subcommand.
func unknownCommand(word string) string {
	if strings.HasPrefix(word, "-") {
		return fmt.Sprintf("gwsim: %s before a command: the command comes first, e.g. gwsim serve %s (gwsim -h lists the commands)", word, word)
	}
	hint := ""
	if s := suggest(word, commands); s != "" {
		hint = ", did you mean " + s + "?"
	}
	return fmt.Sprintf("gwsim: unknown command %q%s (gwsim -h lists the commands)", word, hint)
}

// wantsVersion reports --version (or -version) among a command's
// arguments, before a "--" that ends the flags.
func wantsVersion(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--version" || a == "-version" {
			return true
		}
	}
	return false
}

// checkStore checks the form of a --store value before anything dials it,
// and says in one sentence what is expected, with an example built from
// the value when it looks like HOST:PORT. A value with credentials is
// never repeated.
func checkStore(raw, from string) error {
	if raw == "" {
		return nil
	}
	// The scheme names a backend (simulator.Backend); the rest of the URL
	// is checked where that backend is opened.
	if _, err := simulator.Backend(raw); err == nil {
		return nil
	}
	shown := fmt.Sprintf("%q", raw)
	if strings.ContainsAny(raw, "@") {
		shown = "the value given"
	}
	example := "redis://127.0.0.1:6379/0"
	if host, port, err := net.SplitHostPort(raw); err == nil && host != "" && port != "" && !strings.ContainsAny(raw, "/@") {
		example = "redis://" + net.JoinHostPort(host, port) + "/0"
	}
	return fmt.Errorf("%s %s is not a store URL; give %s, e.g. --store %s", from, shown, simulator.StoreForms, example)
}

// sentinelPasswordEnv holds the Sentinels' own password (their
// requirepass) for a redis+sentinel:// store. There is no flag for it: a
// flag's value is in the process's arguments, for every user of the
// machine to read.
const sentinelPasswordEnv = "GWSIM_SENTINEL_PASSWORD"

// sentinelPassword reads $GWSIM_SENTINEL_PASSWORD, and refuses it with a
// store that is not redis+sentinel:// (from names where the store came
// from), in one line that never shows it.
func sentinelPassword(store, from string, getenv func(string) string) (string, error) {
	pw := getenv(sentinelPasswordEnv)
	if pw == "" || strings.HasPrefix(store, redisstore.SentinelScheme) {
		return pw, nil
	}
	given := from + " is not a redis+sentinel:// URL"
	if store == "" {
		given = "no store is given (--store, GWSIM_STORE): the state is in memory"
	}
	return "", fmt.Errorf("%s is set, but %s: it is only for the Sentinels of a redis+sentinel:// store; unset it or give such a store", sentinelPasswordEnv, given)
}

// Entry is the image's entrypoint rule (ENTRYPOINT ["gwsim"] in the
// Dockerfile): a first argument gwsim or gwconform names the program to
// run with the rest; anything else is gwsim's own arguments. So both
// `docker run gwtools serve --fleet F` and `docker run gwtools gwsim serve
// --fleet F` run gwsim serve, and `docker run gwtools gwconform run` runs
// gwconform. deploy.Entrypoint models it for the recipe tests, and
// TestEntrypointRule holds the two equal.
func Entry(args []string) (program string, rest []string) {
	if len(args) > 0 && (args[0] == "gwsim" || args[0] == "gwconform") {
		return args[0], args[1:]
	}
	return "gwsim", args
}

// execGwconform replaces this process by gwconform, found beside the gwsim
// executable (the image installs both in /usr/local/bin) or on the PATH;
// it returns only when that fails.
func execGwconform(args []string, stderr io.Writer) int {
	path := ""
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "gwconform")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			path = p
		}
	}
	if path == "" {
		if p, err := exec.LookPath("gwconform"); err == nil {
			path = p
		}
	}
	if path == "" {
		fmt.Fprintln(stderr, "gwsim: gwconform is not installed beside gwsim or on the PATH; go install github.com/gwdmi/gwtools/cmd/gwconform@latest installs it")
		return 2
	}
	err := syscall.Exec(path, append([]string{"gwconform"}, args...), os.Environ())
	fmt.Fprintf(stderr, "gwsim: cannot run %s: %v\n", path, err)
	return 2
}

// Upper bounds of gwsim's size flags: beyond them a value is a slip of the
// keyboard that would exhaust memory, refused with the bound in the error.
const (
	maxRateLimit = 1_000_000
	// maxMessageCap bounds each gateway's message log (some 100 bytes a
	// message); maxEffectDelay the wait before a change shows.
	maxMessageCap  = 1_000_000
	maxEffectDelay = time.Minute
	// maxGateways, maxPerGateway and maxDevices bound a generated fleet
	// (some 200 bytes a device).
	maxGateways   = 10_000_000
	maxPerGateway = 100_000
	maxDevices    = 50_000_000
)

// inRange says, naming the flag, that v is outside [lo, hi].
func inRange(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s must be from %d to %d, not %d", flag, lo, hi, v)
	}
	return nil
}

// fleetSize checks a generated fleet's --gateways and
// --devices-per-gateway, each and together.
func fleetSize(gateways, per int) error {
	if err := inRange("--gateways", gateways, 1, maxGateways); err != nil {
		return err
	}
	if err := inRange("--devices-per-gateway", per, 0, maxPerGateway); err != nil {
		return err
	}
	if gateways*per > maxDevices {
		return fmt.Errorf("--gateways %d × --devices-per-gateway %d is %d devices, more than the %d gwsim generates", gateways, per, gateways*per, maxDevices)
	}
	return nil
}

// hostList splits --allowed-hosts at commas, dropping empty names.
func hostList(v string) []string {
	var out []string
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}
