// Package deploy holds the container, Compose, Kubernetes and CI recipes
// of gwtools (files beside this one) and reads the command lines they give
// gwsim and gwconform, so that tests can check every one against the
// programs' own flag parsing (checkArgs in cmd/gwsim and cmd/gwconform):
// recipes that cannot run here must still not rot.
package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// CommandLine is one invocation of gwsim or gwconform found in a recipe.
type CommandLine struct {
	// Where is the file and line (or YAML path) it comes from.
	Where string
	// Program is gwsim or gwconform.
	Program string
	// Args follow the program name: the subcommand and its flags.
	Args []string
	// Docker is the whole docker run (podman, nerdctl) command line when
	// the program runs in our image: its flags matter too (--user for a
	// bind-mounted reports directory, --add-host for host.docker.internal).
	Docker []string
	// Env is the environment the recipe gives the program, by name: the
	// value written (a reference such as ${GWSIM_ADMIN_TOKEN:?} as it is),
	// or "" for a name passed on from the caller's environment (docker run
	// -e NAME). From VAR=value before a shell command, docker run -e, and
	// a YAML command's env, environment or variables, its own or its
	// job's.
	Env map[string]string
}

func (c CommandLine) String() string {
	return fmt.Sprintf("%s: %s %s", c.Where, c.Program, strings.Join(c.Args, " "))
}

// Programs are the names recognised as the first word of a command.
var Programs = []string{"gwsim", "gwconform"}

func program(word string) string {
	base := path.Base(word)
	for _, p := range Programs {
		if base == p {
			return p
		}
	}
	return ""
}

// YAMLFiles lists the YAML recipes under root (the repository): deploy/
// and its subdirectories, but a Helm chart's templates (Go templates that
// helm template renders: TestHelmChart checks what they render).
func YAMLFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "templates" {
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), "Chart.yaml")); err == nil {
				return filepath.SkipDir
			}
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// ParseYAML reads every document of a YAML file; an empty file or one
// without documents is an error.
func ParseYAML(file string) ([]*yaml.Node, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		docs = append(docs, &n)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no YAML document", file)
	}
	return docs, nil
}

// shellKeys are the YAML keys whose string values are shell commands:
// GitHub Actions run, GitLab CI script, Compose/Kubernetes command strings
// and health checks.
var shellKeys = map[string]bool{"run": true, "script": true, "before_script": true, "after_script": true,
	"command": true, "entrypoint": true, "test": true, "args": true}

// FromYAML finds the command lines of a parsed YAML file: a container's
// command and args (Kubernetes), entrypoint and command (Compose, GitLab
// services), written as lists or strings; and the shell lines of run and
// script blocks (GitHub Actions, GitLab CI).
func FromYAML(file string, docs []*yaml.Node) []CommandLine {
	var out []CommandLine
	var walk func(n *yaml.Node, where string, env map[string]string)
	walk = func(n *yaml.Node, where string, env map[string]string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, where, env)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", where, i), env)
			}
		case yaml.MappingNode:
			m := map[string]*yaml.Node{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				m[n.Content[i].Value] = n.Content[i+1]
			}
			env = yamlEnv(env, m)
			n0 := len(out)
			defer func() {
				for i := n0; i < len(out); i++ {
					if out[i].Env == nil {
						out[i].Env = env
					}
				}
			}()
			// An exec form: program from entrypoint or command, then the
			// rest (command after entrypoint, args after command).
			head, tail := m["entrypoint"], m["command"]
			if head == nil {
				head, tail = m["command"], m["args"]
			}
			used := map[string]bool{}
			if img := m["image"]; img != nil && IsImage(img.Value) && m["entrypoint"] == nil {
				// Our image's entrypoint gets the arguments: Compose's
				// command, or Kubernetes' args when no command replaces it.
				var argsNode *yaml.Node
				switch {
				case strings.Contains(where, ".services.") && m["command"] != nil:
					argsNode = m["command"]
				case !strings.Contains(where, ".services.") && m["command"] == nil && m["args"] != nil:
					argsNode = m["args"]
				}
				if argsNode != nil && argsNode.Kind == yaml.SequenceNode && len(argsNode.Content) > 0 {
					p, rest := Entrypoint(strs(argsNode))
					out = append(out, CommandLine{Where: fmt.Sprintf("%s:%d %s", file, argsNode.Line, where), Program: p, Args: rest})
					used["command"], used["args"] = true, true
				}
			}
			if head != nil && head.Kind == yaml.SequenceNode && !used["command"] {
				words := strs(head)
				if tail != nil && tail.Kind == yaml.SequenceNode {
					words = append(words, strs(tail)...)
				}
				if len(words) > 0 && program(words[0]) != "" {
					out = append(out, CommandLine{Where: fmt.Sprintf("%s:%d %s", file, head.Line, where), Program: program(words[0]), Args: words[1:]})
					for k, v := range m {
						if v == head || v == tail {
							used[k] = true
						}
					}
				}
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i].Value, n.Content[i+1]
				if used[k] {
					continue
				}
				if shellKeys[k] {
					switch v.Kind {
					case yaml.ScalarNode:
						out = append(out, FromShell(fmt.Sprintf("%s:%d", file, v.Line), v.Value)...)
						continue
					case yaml.SequenceNode:
						for _, s := range v.Content {
							if s.Kind == yaml.ScalarNode {
								out = append(out, FromShell(fmt.Sprintf("%s:%d", file, s.Line), s.Value)...)
							}
						}
						continue
					}
				}
				walk(v, where+"."+k, env)
			}
		}
	}
	for _, d := range docs {
		walk(d, "", nil)
	}
	return out
}

// yamlEnv is env with the variables a YAML mapping sets added: env and
// environment as a map (Compose, GitHub Actions) or a list of NAME=value
// (Compose) or of {name, value} (Kubernetes), and variables (GitLab CI).
func yamlEnv(env map[string]string, m map[string]*yaml.Node) map[string]string {
	var add [][2]string
	for _, key := range []string{"env", "environment", "variables"} {
		n := m[key]
		if n == nil {
			continue
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				add = append(add, [2]string{n.Content[i].Value, n.Content[i+1].Value})
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				switch c.Kind {
				case yaml.ScalarNode:
					k, v, _ := strings.Cut(c.Value, "=")
					add = append(add, [2]string{k, v})
				case yaml.MappingNode:
					var name, value string
					for i := 0; i+1 < len(c.Content); i += 2 {
						switch c.Content[i].Value {
						case "name":
							name = c.Content[i+1].Value
						case "value":
							value = c.Content[i+1].Value
						case "valueFrom":
							value = "(from " + yamlLine(c.Content[i+1]) + ")"
						}
					}
					if name != "" {
						add = append(add, [2]string{name, value})
					}
				}
			}
		}
	}
	if len(add) == 0 {
		return env
	}
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	for _, kv := range add {
		out[kv[0]] = kv[1]
	}
	return out
}

// yamlLine is a YAML node as one line of text.
func yamlLine(n *yaml.Node) string {
	b, _ := yaml.Marshal(n)
	return strings.Join(strings.Fields(string(b)), " ")
}

func strs(n *yaml.Node) []string {
	var out []string
	for _, c := range n.Content {
		out = append(out, c.Value)
	}
	return out
}

// FromShell finds the command lines in shell text: each simple command
// whose first word (after VAR=value assignments, exec, or a path) is gwsim
// or gwconform, up to a pipe, list operator, redirection or comment.
// Backslash-newline continues a line. A command's Env holds its
// assignments and what export set before it in the text.
func FromShell(where, text string) []CommandLine {
	text = strings.ReplaceAll(text, "\\\n", " ")
	var out []CommandLine
	exported := map[string]string{} // by export NAME[=value] earlier in the text
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		words := shellWords(sc.Text())
		for start := 0; start < len(words); {
			end := start
			for end < len(words) && !isOperator(words[end]) {
				end++
			}
			cmd := words[start:end]
			if len(cmd) > 1 && cmd[0] == "export" {
				for _, w := range cmd[1:] {
					k, v, _ := strings.Cut(w, "=")
					exported[k] = v
				}
			}
			var env map[string]string
			if len(exported) > 0 {
				env = maps.Clone(exported)
			}
			for len(cmd) > 0 && (isAssignment(cmd[0]) || cmd[0] == "exec" || cmd[0] == "sudo" || cmd[0] == "time") {
				if k, v, ok := strings.Cut(cmd[0], "="); ok && isAssignment(cmd[0]) {
					if env == nil {
						env = map[string]string{}
					}
					env[k] = v
				}
				cmd = cmd[1:]
			}
			if len(cmd) > 0 {
				if p := program(cmd[0]); p != "" {
					out = append(out, CommandLine{Where: where, Program: p, Args: cmd[1:], Env: env})
				} else if img, args, entry, ok := dockerRun(cmd); ok && IsImage(img) {
					// docker run [flags] IMAGE [ARGS]: our image runs its
					// entrypoint rule on ARGS (or its CMD when none), in
					// the environment of its -e flags.
					env := dockerEnv(cmd)
					switch {
					case entry != "":
						if p := program(entry); p != "" {
							out = append(out, CommandLine{Where: where, Program: p, Args: args, Docker: cmd, Env: env})
						}
					case len(args) > 0:
						p, rest := Entrypoint(args)
						out = append(out, CommandLine{Where: where, Program: p, Args: rest, Docker: cmd, Env: env})
					default:
						// The image's CMD: All fills it in from the Dockerfile.
						out = append(out, CommandLine{Where: where, Docker: cmd, Env: env})
					}
				} else if wrapper(cmd) {
					// docker run [flags] IMAGE gwsim ..., kubectl exec POD -- gwconform ...,
					// go run ./cmd/gwsim ...
					for i := 1; i < len(cmd); i++ {
						// kubectl names resources like deployment/gwsim: only
						// what follows -- is a command there.
						afterFlag := strings.HasPrefix(cmd[i-1], "-") && cmd[i-1] != "--"
						if cmd[0] == "kubectl" && cmd[i-1] != "--" {
							continue
						}
						if p := program(cmd[i]); p != "" && !afterFlag {
							out = append(out, CommandLine{Where: where, Program: p, Args: cmd[i+1:]})
							break
						}
					}
				}
			}
			start = end + 1
		}
	}
	return out
}

// Image is the name of our image in the docs and manifests (docs/deploy.md):
// gwtools, with any registry, path, tag or digest.
const Image = "gwtools"

// IsImage reports an image reference that names our image
// (gwtools, gwtools:local, ghcr.io/gwdmi/gwtools:v0.1.0).
func IsImage(ref string) bool {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	return path.Base(ref) == Image
}

// Entrypoint is the image's entrypoint rule (gwsim's Entry, which runs as
// ENTRYPOINT ["gwsim"]): a first argument gwsim or gwconform names the
// program to run with the rest; anything else is gwsim's arguments.
// cmd/gwsim's TestEntrypointRule holds the two equal.
func Entrypoint(args []string) (program string, rest []string) {
	if len(args) > 0 && (args[0] == "gwsim" || args[0] == "gwconform") {
		return args[0], args[1:]
	}
	return "gwsim", args
}

// dockerValueFlags are the flags of docker run (and podman, nerdctl run)
// that take a value as the next word; other flags stand alone.
var dockerValueFlags = map[string]bool{
	"-p": true, "--publish": true, "-v": true, "--volume": true, "-e": true, "--env": true, "--env-file": true,
	"--name": true, "-u": true, "--user": true, "--add-host": true, "--network": true, "--net": true,
	"-w": true, "--workdir": true, "--entrypoint": true, "--mount": true, "-l": true, "--label": true,
	"--cpus": true, "-m": true, "--memory": true, "--restart": true, "--platform": true, "-h": true,
	"--hostname": true, "--pull": true, "--tmpfs": true, "--ulimit": true, "--cap-add": true, "--cap-drop": true,
	"--health-cmd": true, "--log-driver": true, "--dns": true, "--expose": true, "--group-add": true,
	"--security-opt": true, "--stop-signal": true, "--stop-timeout": true,
}

// dockerRun reads `docker run [flags] IMAGE [ARGS...]` (also podman and
// nerdctl): the image, the arguments given to its entrypoint, and an
// --entrypoint override.
func dockerRun(cmd []string) (image string, args []string, entrypoint string, ok bool) {
	if len(cmd) < 3 || cmd[1] != "run" {
		return "", nil, "", false
	}
	switch cmd[0] {
	case "docker", "podman", "nerdctl":
	default:
		return "", nil, "", false
	}
	for i := 2; i < len(cmd); i++ {
		w := cmd[i]
		if !strings.HasPrefix(w, "-") {
			return w, cmd[i+1:], entrypoint, true
		}
		name, value, hasValue := strings.Cut(w, "=")
		if dockerValueFlags[name] && !hasValue {
			i++
			if i < len(cmd) {
				value = cmd[i]
			}
		}
		if name == "--entrypoint" {
			entrypoint = value
		}
	}
	return "", nil, "", false
}

// dockerEnv is the environment docker run's -e and --env flags give the
// container: NAME=value, or NAME alone for the caller's value ("").
func dockerEnv(cmd []string) map[string]string {
	env := map[string]string{}
	for i := 2; i < len(cmd); i++ {
		w := cmd[i]
		if !strings.HasPrefix(w, "-") {
			break
		}
		name, value, hasValue := strings.Cut(w, "=")
		if dockerValueFlags[name] && !hasValue {
			i++
			if i < len(cmd) {
				value = cmd[i]
			}
		}
		if name == "-e" || name == "--env" {
			k, v, _ := strings.Cut(value, "=")
			env[k] = v
		}
	}
	return env
}

// wrapper reports a command that runs another: a container runtime, or go run.
func wrapper(cmd []string) bool {
	switch cmd[0] {
	case "docker", "podman", "nerdctl", "kubectl":
		return true
	case "go":
		return len(cmd) > 1 && cmd[1] == "run"
	}
	return false
}

func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	return eq > 0 && !strings.HasPrefix(w, "-") && !strings.ContainsAny(w[:eq], "/. ")
}

func isOperator(w string) bool {
	switch w {
	case "|", "||", "&&", ";", "&", "(", ")", "\x00#":
		return true
	}
	return strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "1>") || strings.HasPrefix(w, "&>")
}

// shellWords splits one line as a POSIX shell would for our purposes:
// quotes, backslashes, and operators as their own words; a comment ends
// the line (reported as the operator "\x00#").
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			words = append(words, "\x00#")
			return words
		case c == '|' || c == '&' || c == ';' || c == '(' || c == ')':
			if c == '&' && inWord && (cur.String() == "2>" || cur.String() == ">") {
				cur.WriteByte(c)
				continue
			}
			flush()
			op := string(c)
			if i+1 < len(line) && (line[i+1] == c) {
				op += string(c)
				i++
			}
			words = append(words, op)
		case (c == '>' || c == '<') && !inWord:
			cur.WriteByte(c)
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words
}

// FromMarkdown finds the command lines in the fenced code blocks of a
// Markdown file: shell blocks line by line, YAML blocks as YAML; text
// blocks (a program's output) are not read.
func FromMarkdown(file string) ([]CommandLine, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []CommandLine
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		lang := strings.TrimPrefix(fence, "```")
		start := i + 1
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
		}
		body := strings.Join(lines[start:min(i, len(lines))], "\n")
		where := fmt.Sprintf("%s:%d", file, start)
		switch lang {
		case "yaml", "yml":
			docs, err := parseYAMLText(body)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			out = append(out, FromYAML(where, docs)...)
		case "dockerfile", "Dockerfile":
			out = append(out, FromDockerfile(where, body)...)
		case "text", "console", "output":
			// What a program printed, not command lines.
		case "python", "py":
			// A program's source (the pytest plugin's examples), not
			// command lines.
		default:
			out = append(out, FromShell(where, body)...)
		}
	}
	return out, nil
}

func parseYAMLText(text string) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
}

// Instruction is one instruction of a Dockerfile.
type Instruction struct {
	Line int
	// Cmd is the instruction in upper case (FROM, RUN, USER...).
	Cmd  string
	Args string
}

// ParseDockerfile splits a Dockerfile into instructions, joining
// continuation lines and dropping comments.
func ParseDockerfile(text string) []Instruction {
	var out []Instruction
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n := i + 1
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			next := strings.TrimSpace(lines[i])
			if strings.HasPrefix(next, "#") {
				continue
			}
			line = strings.TrimSuffix(line, "\\") + " " + next
		}
		cmd, args, _ := strings.Cut(line, " ")
		out = append(out, Instruction{Line: n, Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)})
	}
	return out
}

// FromDockerfile finds the command lines of a Dockerfile: RUN lines as
// shell, and the image's default command, ENTRYPOINT followed by CMD.
func FromDockerfile(where, text string) []CommandLine {
	var out []CommandLine
	var entry, cmd []string
	for _, in := range ParseDockerfile(text) {
		switch in.Cmd {
		case "RUN", "HEALTHCHECK":
			out = append(out, FromShell(fmt.Sprintf("%s:%d", where, in.Line), in.Args)...)
		case "ENTRYPOINT":
			entry = execForm(in.Args)
		case "CMD":
			cmd = execForm(in.Args)
		case "FROM":
			entry, cmd = nil, nil
		}
	}
	words := append(append([]string{}, entry...), cmd...)
	if len(entry) == 1 && program(entry[0]) == "gwsim" {
		// gwsim as the entrypoint applies the image's rule (Entrypoint).
		p, rest := Entrypoint(cmd)
		words = append([]string{p}, rest...)
	}
	if len(words) > 0 && program(words[0]) != "" {
		out = append(out, CommandLine{Where: where + " ENTRYPOINT+CMD", Program: program(words[0]), Args: words[1:]})
	}
	return out
}

// execForm reads ["a", "b"] (JSON array form) or a shell form as words.
func execForm(s string) []string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(s), &n); err == nil && len(n.Content) == 1 && n.Content[0].Kind == yaml.SequenceNode {
			return strs(n.Content[0])
		}
	}
	return shellWords(s)
}

// MarkdownFiles lists the documentation below root: README.md and every
// page of docs/ but those a program writes (benchmarks.md by make bench,
// whose command lines name placeholders; checks.md by make checks-doc).
func MarkdownFiles(root string) ([]string, error) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(pages)
	out := []string{filepath.Join(root, "README.md")}
	for _, p := range pages {
		if b := filepath.Base(p); b != "benchmarks.md" && b != "checks.md" {
			out = append(out, p)
		}
	}
	return out, nil
}

// All is every command line of the repository's recipes and docs: the
// YAML files under deploy/, the Dockerfile, README.md and docs/*.md.
func All(root string) ([]CommandLine, error) {
	var out []CommandLine
	files, err := YAMLFiles(root)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		docs, err := ParseYAML(f)
		if err != nil {
			return nil, err
		}
		out = append(out, FromYAML(f, docs)...)
	}
	df := filepath.Join(root, "Dockerfile")
	b, err := os.ReadFile(df)
	if err != nil {
		return nil, err
	}
	fromDockerfile := FromDockerfile(df, string(b))
	out = append(out, fromDockerfile...)
	var image *CommandLine // the image's ENTRYPOINT and CMD
	for i := range fromDockerfile {
		if strings.HasSuffix(fromDockerfile[i].Where, " ENTRYPOINT+CMD") {
			image = &fromDockerfile[i]
		}
	}

	docs, err := MarkdownFiles(root)
	if err != nil {
		return nil, err
	}
	for _, md := range docs {
		lines, err := FromMarkdown(md)
		if err != nil {
			return nil, err
		}
		out = append(out, lines...)
	}
	for i := range out {
		if out[i].Program == "" && out[i].Docker != nil && image != nil {
			out[i].Program, out[i].Args = image.Program, image.Args
		}
	}
	return out, nil
}

// CheckPrograms runs every command line of one program found in the
// recipes below root through that program's own flag parsing (its
// checkArgs) and reports each it refuses; both programs' tests call it.
func CheckPrograms(t interface {
	Helper()
	Errorf(string, ...any)
	Fatal(...any)
	Logf(string, ...any)
}, root, program string, checkArgs func([]string) error) {
	t.Helper()
	lines, err := All(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range lines {
		if l.Program != program {
			continue
		}
		n++
		if err := checkArgs(l.Args); err != nil {
			t.Errorf("%s\n    refused: %v", l, err)
		}
	}
	if n == 0 {
		t.Fatal("no " + program + " command line found in the recipes")
	}
	t.Logf("%d %s command lines checked", n, program)
}
