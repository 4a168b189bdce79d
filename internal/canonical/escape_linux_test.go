package canonical

import (
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// The scanners read whole blocks; strings that end right before an unmapped
// page prove they never read past the end of s (a stray read faults).
func TestEscapeASCIIAtPageEnd(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	copy(mem[page-100:page], strings.Repeat("abc\"efghi\n", 10))
	for n := range 100 {
		for _, last := range []byte{'z', '"'} {
			mem[page-1] = last
			b := mem[page-n : page]
			s := unsafe.String(unsafe.SliceData(b), len(b))
			checkCopyPlain(t, s)
			checkEscapeASCII(t, s, 8)
		}
	}
}
