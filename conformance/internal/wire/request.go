package wire

import (
	"bytes"
	"fmt"
	"strconv"
)

// Request is one request as it goes on the wire.
type Request struct {
	// Method is POST when empty; Proto HTTP/1.1 when empty.
	Method, Path, Proto string
	// Host is the Host header's value (none for an HTTP/1.0 request
	// when empty).
	Host string
	// Header holds the other header fields, in the order sent.
	Header [][2]string
	// Body is the content. It is framed by a Content-Length, or, when
	// Chunks is set, chunked: in pieces of these sizes, the rest as one
	// more piece, then the last chunk.
	Body   []byte
	Chunks []int
}

// Head is the request line and the header section.
func (q Request) Head() []byte {
	var b bytes.Buffer
	m, proto := q.Method, q.Proto
	if m == "" {
		m = "POST"
	}
	if proto == "" {
		proto = "HTTP/1.1"
	}
	fmt.Fprintf(&b, "%s %s %s\r\n", m, q.Path, proto)
	if q.Host != "" {
		fmt.Fprintf(&b, "Host: %s\r\n", q.Host)
	}
	for _, h := range q.Header {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	switch {
	case q.Chunks != nil:
		b.WriteString("Transfer-Encoding: chunked\r\n")
	case q.Body != nil || m == "POST":
		b.WriteString("Content-Length: " + strconv.Itoa(len(q.Body)) + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// Content is the body as framed.
func (q Request) Content() []byte {
	if q.Chunks == nil {
		return q.Body
	}
	var b bytes.Buffer
	rest := q.Body
	for _, n := range q.Chunks {
		n = min(n, len(rest))
		if n == 0 {
			continue
		}
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, rest[:n])
		rest = rest[n:]
	}
	if len(rest) > 0 {
		fmt.Fprintf(&b, "%X\r\n%s\r\n", len(rest), rest)
	}
	b.WriteString("0\r\n\r\n")
	return b.Bytes()
}

// Bytes is the whole request.
func (q Request) Bytes() []byte { return append(q.Head(), q.Content()...) }
