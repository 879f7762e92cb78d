package proxy

import (
	"net/http"
	"path"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// pathProblem says why a request's path is refused, or "" when it is
// taken. The proxy decides what is its own (/_sim/, /metrics, the live
// page) and what it passes on by the path as decoded, and the upstream
// may decode it once more or clean it: a path whose decoded and cleaned
// forms differ, or that a second decoding would change, could be read as
// /_sim/ upstream while the proxy saw another path. So an encoded slash
// or backslash, an encoded percent (a second encoding), an encoded dot, a
// raw backslash, an empty segment (//) and a dot segment (/./, /../) are
// refused in every path, whether the proxy answers it or passes it on.
func pathProblem(r *http.Request) string {
	if r.Method == http.MethodConnect || r.URL.Path == "*" && r.Method == http.MethodOptions {
		return ""
	}
	raw := r.URL.EscapedPath()
	lower := strings.ToLower(raw)
	for _, enc := range []struct{ seq, what string }{
		{"%2f", "an encoded slash (%2F)"},
		{"%5c", "an encoded backslash (%5C)"},
		{"%25", "an encoded percent sign (%25, a second encoding)"},
		{"%2e", "an encoded dot (%2E)"},
		{"%00", "an encoded NUL (%00)"},
	} {
		if strings.Contains(lower, enc.seq) {
			return "the path holds " + enc.what
		}
	}
	p := r.URL.Path
	if why := ownPathProblem(p); why != "" {
		return why
	}
	switch {
	case !strings.HasPrefix(p, "/"):
		return "the path does not start with /"
	case strings.ContainsRune(p, '\\') || strings.ContainsRune(raw, '\\'):
		return "the path holds a backslash"
	case strings.Contains(p, "//"):
		return "the path holds an empty segment (//)"
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return "the path holds a dot segment (/" + seg + "/)"
		}
	}
	if c := path.Clean(p); c != p && c+"/" != p {
		return "the path is not in its clean form"
	}
	return ""
}

// cleanPaths refuses, with 400 and the reason, every request whose path
// pathProblem refuses, before the proxy decides anything by it. A refused
// request reaches neither the proxy's own handlers nor the upstream.
func cleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := pathProblem(r); why != "" {
			adminError(w, http.StatusBadRequest, device.Errorf(device.CodeBadRequest, "path",
				"%s: the proxy takes a path only in its plain form (no encoded slash, backslash, dot or percent, no // or dot segment, its own paths in their own case)", why))
			return
		}
		next.ServeHTTP(w, r)
	})
}
