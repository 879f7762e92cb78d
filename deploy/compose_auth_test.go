package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composePasswordRef is how a Compose file takes Redis's password: from
// the user's environment, compose refusing to start without it (as
// ${GWSIM_ADMIN_TOKEN:?...} for the admin token).
const composePasswordRef = "${GWSIM_REDIS_PASSWORD:?set GWSIM_REDIS_PASSWORD}"

// composeVar is one thing compose interpolates: $$ (a $), ${NAME},
// ${NAME:?message}, ${NAME?message}, ${NAME:-default}, ${NAME-default},
// $NAME.
var composeVar = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[?-])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// composeInterpolate is s as compose reads it with the environment vars:
// an unset (or, with :?, empty) variable marked ? is the error compose
// stops with.
func composeInterpolate(s string, vars map[string]string) (string, error) {
	var err error
	out := composeVar.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		sub := composeVar.FindStringSubmatch(m)
		name, op, arg := sub[1], sub[2], sub[3]
		if name == "" {
			name = sub[4]
		}
		v, set := vars[name]
		empty := !set || (strings.HasPrefix(op, ":") && v == "")
		switch {
		case strings.HasSuffix(op, "?") && empty:
			if err == nil {
				err = fmt.Errorf("required variable %s is missing a value: %s", name, arg)
			}
			return ""
		case strings.HasSuffix(op, "-") && empty:
			return arg
		}
		return v
	})
	return out, err
}

// composeWords are a list or a string of a Compose file (a command, an
// entrypoint, a health check's test) as words; a string is split on
// spaces, as compose would for a plain one.
func composeWords(v any) []string {
	switch x := v.(type) {
	case string:
		return strings.Fields(x)
	case []any:
		var out []string
		for _, w := range x {
			out = append(out, fmt.Sprint(w))
		}
		return out
	}
	return nil
}

// composeEnv is a service's environment, as a map or a list of NAME=VALUE.
func composeEnv(v any) map[string]string {
	out := map[string]string{}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			out[k] = fmt.Sprint(val)
		}
	case []any:
		for _, e := range x {
			k, val, _ := strings.Cut(fmt.Sprint(e), "=")
			out[k] = val
		}
	}
	return out
}

var (
	composeStore = regexp.MustCompile(`^(redis|rediss|redis\+sentinel)://:` + regexp.QuoteMeta(composePasswordRef) + `@[^/@]+/`)
	// A Redis config line that takes the password, and what it is given.
	composeConfPassword = regexp.MustCompile(`(?m)(?:^|["'\s])(requirepass|masterauth|sentinel auth-pass \S+) +([^\s"']*)`)
	// The user info of a store URL anywhere in the file.
	composeURLPassword = regexp.MustCompile(`(?:redis|rediss|redis\+sentinel)://([^@/\s"']*)@`)
	// $REDIS_PASSWORD that compose would interpolate (from the user's
	// environment, where it is not set) rather than leave to the shell.
	composeUnescaped = regexp.MustCompile(`(^|[^$])\$\{?REDIS_PASSWORD`)
)

// composeRedisAuthProblems lists what breaks the rule of a Compose stack
// (the file's text) for Redis's password: Redis requires it in every
// stack, the password coming from the user's environment
// (composePasswordRef) and going on no process's command line, where any
// user of the machine reads it. So: a Redis node runs an sh script that
// gives redis-server requirepass $$REDIS_PASSWORD in its config (and, in
// a stack with Sentinels, masterauth: a replica authenticates to its
// primary), never --requirepass or --masterauth in its arguments; a
// Sentinel's file, written with umask 077, has sentinel auth-pass for the
// primary it monitors and requirepass; REDIS_PASSWORD, REDISCLI_AUTH and
// GWSIM_SENTINEL_PASSWORD are composePasswordRef itself; a health check
// that runs redis-cli has REDISCLI_AUTH; gwsim has no --store and no
// password in its arguments, GWSIM_STORE a URL with composePasswordRef as
// its password and, with a redis+sentinel:// store,
// GWSIM_SENTINEL_PASSWORD. No command interpolates the password (compose
// would put it in the arguments), and no password is written in the file
// (password, when given, is one that must not be in it). want: how many
// Redis nodes, Sentinels and gwsim services the stack has.
func composeRedisAuthProblems(text []byte, password string, nodes, sentinels, gwsims int) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if password != "" && strings.Contains(string(text), password) {
		bad("the password itself is in the file")
	}
	for _, m := range composeURLPassword.FindAllStringSubmatch(string(text), -1) {
		if m[1] != ":"+composePasswordRef {
			bad("a store URL with %q before @, not :%s", m[1], composePasswordRef)
		}
	}
	var f struct {
		Services map[string]map[string]any `yaml:"services"`
	}
	if err := yaml.Unmarshal(text, &f); err != nil {
		return append(out, err.Error())
	}
	var found struct{ nodes, sentinels, gwsims int }
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range f.Services {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		s := f.Services[name]
		say := func(format string, args ...any) { bad("service %s: %s", name, fmt.Sprintf(format, args...)) }
		words := append(composeWords(s["entrypoint"]), composeWords(s["command"])...)
		argv := strings.Join(words, " ")
		env := composeEnv(s["environment"])
		image := fmt.Sprint(s["image"])
		for _, v := range []string{"REDIS_PASSWORD", "REDISCLI_AUTH", "GWSIM_SENTINEL_PASSWORD"} {
			if val, ok := env[v]; ok && val != composePasswordRef {
				say("%s is %q, not %s", v, val, composePasswordRef)
			}
		}
		if strings.Contains(argv, "GWSIM_REDIS_PASSWORD") {
			say("compose puts the password in its command: %s", argv)
		}
		if composeUnescaped.MatchString(argv) {
			say("$REDIS_PASSWORD in its command is compose's to fill in (from your shell, where it is not set), not the shell's: write $$REDIS_PASSWORD")
		}
		for _, m := range composeConfPassword.FindAllStringSubmatch(argv, -1) {
			if m[2] != "$$REDIS_PASSWORD" {
				say("%s is given %q, not $$REDIS_PASSWORD", m[1], m[2])
			}
		}
		hc, _ := s["healthcheck"].(map[string]any)
		if slices.Contains(composeWords(hc["test"]), "redis-cli") && env["REDISCLI_AUTH"] != composePasswordRef {
			say("its health check runs redis-cli without REDISCLI_AUTH: Redis would refuse it")
		}
		hasLine := func(line string) bool {
			return regexp.MustCompile(`(?m)(^|["'])` + regexp.QuoteMeta(line) + `($|["'])`).MatchString(argv)
		}
		switch {
		case strings.HasPrefix(image, "redis:") && strings.Contains(argv, "--sentinel"):
			found.sentinels++
			m := sentinelMonitor.FindStringSubmatch(argv)
			if m == nil || !hasLine("sentinel auth-pass "+m[1]+" $$REDIS_PASSWORD") {
				say("the Sentinel's file has no sentinel auth-pass with $$REDIS_PASSWORD for the primary it monitors")
			}
			if !hasLine("requirepass $$REDIS_PASSWORD") {
				say("the Sentinel's file has no requirepass $$REDIS_PASSWORD: anyone who reaches it could point it at another Redis")
			}
			if !strings.Contains(argv, "umask 077") {
				say("the Sentinel's file, which holds the password, is not written with umask 077")
			}
			if env["REDIS_PASSWORD"] != composePasswordRef {
				say("no REDIS_PASSWORD: %s", composePasswordRef)
			}
		case strings.HasPrefix(image, "redis:"):
			found.nodes++
			if strings.Contains(argv, "--requirepass") || strings.Contains(argv, "--masterauth") {
				say("the password in redis-server's arguments (--requirepass, --masterauth): give it in its config")
			}
			if len(words) < 3 || words[0] != "sh" || words[1] != "-c" {
				say("Redis does not run from an sh script that writes its config from the environment: %s", argv)
			}
			want := []string{"requirepass $$REDIS_PASSWORD"}
			if sentinels > 0 {
				want = append(want, "masterauth $$REDIS_PASSWORD")
			}
			for _, w := range want {
				if !hasLine(w) {
					say("Redis's config has no %s", w)
				}
			}
			if env["REDIS_PASSWORD"] != composePasswordRef {
				say("no REDIS_PASSWORD: %s", composePasswordRef)
			}
		case image == "gwtools:local" || s["build"] != nil:
			prog, rest := Entrypoint(words)
			if prog != "gwsim" || len(rest) == 0 || rest[0] != "serve" {
				continue
			}
			found.gwsims++
			for _, w := range rest {
				if w == "--store" || strings.HasPrefix(w, "--store=") {
					say("--store in gwsim's arguments (it would win over GWSIM_STORE): %s", argv)
				}
			}
			st, ok := env["GWSIM_STORE"]
			switch {
			case !ok:
				say("no GWSIM_STORE")
			case !composeStore.MatchString(st):
				say("GWSIM_STORE %q is not a URL with :%s@", st, composePasswordRef)
			case strings.HasPrefix(st, "redis+sentinel://") && env["GWSIM_SENTINEL_PASSWORD"] != composePasswordRef:
				say("GWSIM_STORE is redis+sentinel:// but there is no GWSIM_SENTINEL_PASSWORD: the Sentinels would refuse gwsim")
			}
		}
	}
	for _, c := range []struct {
		what      string
		got, want int
	}{{"Redis nodes", found.nodes, nodes}, {"Sentinels", found.sentinels, sentinels}, {"gwsim services", found.gwsims, gwsims}} {
		if c.got != c.want {
			bad("%d %s, want %d", c.got, c.what, c.want)
		}
	}
	sort.Strings(out)
	return out
}

// composeStack is a shipped Compose file and how many Redis nodes,
// Sentinels and gwsim services it has.
type composeStack struct {
	file                     string
	nodes, sentinels, gwsims int
}

var composeStacks = []composeStack{
	{"deploy/compose.yaml", 1, 0, 1},
	{"deploy/compose-sentinel.yaml", 3, 3, 1},
}

// TestComposeRedisAuth: Redis requires its password in every shipped
// Compose stack, given as composeRedisAuthProblems says.
func TestComposeRedisAuth(t *testing.T) {
	for _, st := range composeStacks {
		b, err := os.ReadFile(filepath.Join(root, st.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range composeRedisAuthProblems(b, "", st.nodes, st.sentinels, st.gwsims) {
			t.Errorf("%s: %s", st.file, p)
		}
		// Compose refuses to start without the password.
		if _, err := composeInterpolate(string(b), map[string]string{"GWSIM_ADMIN_TOKEN": "t"}); err == nil || !strings.Contains(err.Error(), "GWSIM_REDIS_PASSWORD") {
			t.Errorf("%s: starts without GWSIM_REDIS_PASSWORD (%v)", st.file, err)
		}
	}
}

// TestComposeRedisAuthCheck: composeRedisAuthProblems refuses each
// shipped Compose file with the password dropped anywhere, so that its
// pass on them means something.
func TestComposeRedisAuthCheck(t *testing.T) {
	read := func(file string) string {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	type spoil struct{ what, from, to string }
	for _, tc := range []struct {
		file   string
		spoils []spoil
	}{
		{"deploy/compose.yaml", []spoil{
			{"Redis without requirepass", "        requirepass $$REDIS_PASSWORD\n", ""},
			{"Redis given --requirepass in its arguments", `--save "" <<EOF`, `--save "" --requirepass "$$REDIS_PASSWORD" <<EOF`},
			{"Redis run as redis-server, not from a script", "    command:\n      - sh\n      - -c\n      - |\n        umask 077\n        exec redis-server - --appendonly yes --appendfsync always --save \"\" <<EOF\n        requirepass $$REDIS_PASSWORD\n        EOF\n",
				"    command: [\"redis-server\", \"--appendonly\", \"yes\"]\n"},
			{"the health check without REDISCLI_AUTH", "      REDISCLI_AUTH: " + composePasswordRef + "\n", ""},
			{"Redis without REDIS_PASSWORD", "      REDIS_PASSWORD: " + composePasswordRef + "\n", ""},
			{"the password interpolated into Redis's command", "requirepass $$REDIS_PASSWORD", "requirepass " + composePasswordRef},
			{"$REDIS_PASSWORD left to compose", "requirepass $$REDIS_PASSWORD", "requirepass $REDIS_PASSWORD"},
			{"a password literal in Redis's config", "requirepass $$REDIS_PASSWORD", "requirepass s3cret"},
			{"a password literal for REDIS_PASSWORD", "REDIS_PASSWORD: " + composePasswordRef, "REDIS_PASSWORD: s3cret"},
			{"a password literal in GWSIM_STORE", "redis://:" + composePasswordRef + "@", "redis://:s3cret@"},
			{"a password default", "REDISCLI_AUTH: " + composePasswordRef, "REDISCLI_AUTH: ${GWSIM_REDIS_PASSWORD:-s3cret}"},
			{"gwsim with --store", `"--log-format", "json",`, `"--store", "redis://redis:6379/0", "--log-format", "json",`},
			{"gwsim with the password in its arguments", `"--log-format", "json",`, `"--store", "redis://:` + composePasswordRef + `@redis:6379/0", "--log-format", "json",`},
			{"GWSIM_STORE without the password", "redis://:" + composePasswordRef + "@redis", "redis://redis"},
			{"gwsim without GWSIM_STORE", "      GWSIM_STORE: redis://:" + composePasswordRef + "@redis:6379/0\n", ""},
		}},
		{"deploy/compose-sentinel.yaml", []spoil{
			{"a node without requirepass", "        requirepass $$REDIS_PASSWORD\n        masterauth", "        masterauth"},
			{"a node without masterauth", "        masterauth $$REDIS_PASSWORD\n", ""},
			{"the nodes' health check without REDISCLI_AUTH", "    REDISCLI_AUTH: " + composePasswordRef + "\n", ""},
			{"a Sentinel without auth-pass", ` "sentinel auth-pass gwsim $$REDIS_PASSWORD"`, ""},
			{"a Sentinel with auth-pass for another primary", `"sentinel auth-pass gwsim $$REDIS_PASSWORD"`, `"sentinel auth-pass other $$REDIS_PASSWORD"`},
			{"a Sentinel without requirepass", ` "requirepass $$REDIS_PASSWORD"`, ""},
			{"a Sentinel's file written without umask 077", "      umask 077\n      printf", "      printf"},
			{"a password literal in a Sentinel's file", `"sentinel auth-pass gwsim $$REDIS_PASSWORD"`, `"sentinel auth-pass gwsim s3cret"`},
			{"gwsim with --store", `"--store-durability"`, `"--store", "redis+sentinel://sentinel-1:26379/gwsim/0", "--store-durability"`},
			{"gwsim with the password in its arguments", `"--log-format", "json",`, `"--log-format", "json", "--admin-token", "` + composePasswordRef + `",`},
			{"gwsim without GWSIM_SENTINEL_PASSWORD", "      GWSIM_SENTINEL_PASSWORD: " + composePasswordRef + "\n", ""},
			{"GWSIM_STORE without the password", "redis+sentinel://:" + composePasswordRef + "@", "redis+sentinel://"},
		}},
	} {
		good := read(tc.file)
		st := composeStacks[slices.IndexFunc(composeStacks, func(s composeStack) bool { return s.file == tc.file })]
		if p := composeRedisAuthProblems([]byte(good), "", st.nodes, st.sentinels, st.gwsims); len(p) > 0 {
			t.Fatalf("%s is refused: %v", tc.file, p)
		}
		for _, s := range tc.spoils {
			if !strings.Contains(good, s.from) {
				t.Errorf("%s: %s: %q is not in the file (the case is stale)", tc.file, s.what, s.from)
				continue
			}
			spoiled := strings.Replace(good, s.from, s.to, 1)
			if p := composeRedisAuthProblems([]byte(spoiled), "s3cret", st.nodes, st.sentinels, st.gwsims); len(p) == 0 {
				t.Errorf("%s with %s passes", tc.file, s.what)
			} else {
				t.Logf("%s with %s: %s", tc.file, s.what, p[0])
			}
		}
	}
	if got, err := composeInterpolate("a $$X ${A} ${B:-d} ${C:?set C}", map[string]string{"A": "1", "C": "3"}); err != nil || got != "a $X 1 d 3" {
		t.Errorf("composeInterpolate: %q %v", got, err)
	}
	if _, err := composeInterpolate("${C:?set C}", map[string]string{"C": ""}); err == nil {
		t.Error("composeInterpolate: an empty ${C:?} is taken")
	}
}
