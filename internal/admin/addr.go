package admin

import (
	"net"
	"strconv"
)

// BrokerDefault is the broker's admin address when nothing sets one
// (Redpanda's admin port).
const BrokerDefault = "127.0.0.1:9644"

// BrokerPortOffset is how far a broker's default admin port is from its
// first listener's port: 9092 + 552 = 9644. Nodes on one host need
// distinct listener ports anyway, so the admin ports derived from them are
// distinct too, and a second node no longer stops on the first one's 9644.
const BrokerPortOffset = 9644 - 9092

// BrokerAddr is the default admin address of a broker whose first listener
// is on listenerPort: loopback, at listenerPort + BrokerPortOffset; any free
// port when the listener's port is 0 (ephemeral) or the sum is not a port.
func BrokerAddr(listenerPort int) string {
	port := listenerPort + BrokerPortOffset
	if listenerPort <= 0 || port > 65535 {
		port = 0
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
