//go:build !linux

package web

import "net"

// cork is Linux's TCP_CORK; elsewhere responses go out as net/http writes them.
func cork(net.Conn, bool) bool { return false }
