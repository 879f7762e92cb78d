package server

import (
	"bytes"
	"fmt"
	"net"

	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// net/http answers two kinds of bad input itself, before any handler runs,
// with a 5xx: 501 to a transfer coding it does not know (or Transfer-Encoding
// sent twice) and 505 to an HTTP version it does not speak. Bad input never
// gets a 5xx from us (CONTRACT 4), so a listener wrapper turns exactly those
// canned answers into a 400 with our error payload. Our handlers never answer
// 501 or 505, so nothing else can match.
var cannedFiveXX = []struct {
	prefix []byte
	err    *device.Error
}{
	{[]byte("HTTP/1.1 501 Not Implemented\r\n"), device.Errorf(device.CodeMalformedBody, "Transfer-Encoding",
		"Transfer-Encoding must be chunked, once, or absent; send the body with Content-Length or chunked")},
	{[]byte("HTTP/1.1 505 HTTP Version Not Supported"), device.Errorf(device.CodeBadRequest, "",
		"this HTTP version is not supported; use HTTP/1.1")},
}

type noFiveXXListener struct{ net.Listener }

func (l noFiveXXListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return noFiveXXConn{c}, nil
}

type noFiveXXConn struct{ net.Conn }

func (c noFiveXXConn) Write(p []byte) (int, error) {
	for _, canned := range cannedFiveXX {
		if bytes.HasPrefix(p, canned.prefix) {
			body := codec.Error(device.JSON, canned.err)
			answer := fmt.Sprintf("HTTP/1.1 400 Bad Request\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
				codec.ContentType(device.JSON), len(body), body)
			if _, err := c.Conn.Write([]byte(answer)); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}
