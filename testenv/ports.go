package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"
)

// freePorts reserves n distinct loopback ports for route listeners, which
// must be known before any node starts because each node lists all routes.
// The ports are drawn from below the kernel's ephemeral range where it can,
// because a port released there is soon handed to some other process's
// listener on port 0 or outgoing connection; between release and the node's
// own listen that would steal it.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	low := ephemeralLow()
	for len(ports) < n {
		l, err := listenOutsideEphemeral(low)
		if err != nil {
			t.Fatalf("testenv: reserve port: %v", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// FreeAddr returns a loopback address, 127.0.0.1:<port>, that no one listens
// on right now, for a process under test to listen on next. The port comes
// from outside the kernel's ephemeral range, like the cluster's route ports,
// so it is unlikely to be taken before the process gets to it.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(freePorts(t, 1)[0])
}

// Ports below ephemeralFloor are left alone: well-known services live there.
const ephemeralFloor = 10000

// listenOutsideEphemeral listens on a random free loopback port in
// [ephemeralFloor, low), falling back to a kernel-chosen port when that range
// is too small or every try is taken.
func listenOutsideEphemeral(low int) (net.Listener, error) {
	if low-ephemeralFloor >= 1000 {
		for range 50 {
			port := ephemeralFloor + rand.IntN(low-ephemeralFloor)
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				return l, nil
			}
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0 when
// it cannot be read (not Linux), which disables the outside-range choice.
func ephemeralLow() int {
	var low int
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		_, _ = fmt.Sscan(string(b), &low)
	}
	return low
}
