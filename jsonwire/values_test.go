package jsonwire

import (
	"strings"
	"testing"
)

func TestIsHash64(t *testing.T) {
	valid := strings.Repeat("0123456789abcdef", 4)
	if !IsHash64(valid) || IsHash64(valid[1:]) || IsHash64(valid+"0") || IsHash64("") {
		t.Fatal("length or valid hash misjudged")
	}
	for c := range 256 {
		want := (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
		for _, at := range []int{0, 7, 8, 35, 63} {
			s := valid[:at] + string([]byte{byte(c)}) + valid[at+1:]
			if IsHash64(s) != want {
				t.Fatalf("byte %#x at %d: got %v", c, at, !want)
			}
		}
	}
}
