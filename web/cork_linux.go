package web

import (
	"net"
	"syscall"
)

// cork sets or clears TCP_CORK on a TCP connection and reports whether it could.
func cork(conn net.Conn, on bool) bool {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return false
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	v := 0
	if on {
		v = 1
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, v)
	}); err != nil {
		return false
	}
	return serr == nil
}
