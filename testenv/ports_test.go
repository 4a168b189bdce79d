package testenv

import (
	"net"
	"testing"
)

func TestRoutePortsAvoidTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low-ephemeralFloor < 1000 {
		t.Skipf("ephemeral range starts at %d; nothing below it to choose from", low)
	}
	for _, p := range freePorts(t, 6) {
		if p < ephemeralFloor || p >= low {
			t.Errorf("route port %d outside [%d, %d)", p, ephemeralFloor, low)
		}
	}
}

func TestListenOutsideEphemeralFallsBackToKernelPort(t *testing.T) {
	l, err := listenOutsideEphemeral(ephemeralFloor + 10)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Too small a range to draw from: the kernel picks, from its own range.
	if p, low := l.Addr().(*net.TCPAddr).Port, ephemeralLow(); p < low {
		t.Fatalf("port %d below the ephemeral range starting at %d", p, low)
	}
}
