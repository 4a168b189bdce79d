//go:build amd64 && !purego

package canonical

// escapeASCII writes s to dst with the escapes of string (see
// escapeASCIIWords, the portable form, for the contract) and returns how
// many bytes of s it read and of dst it wrote.
//
// On amd64 it is assembly: plain runs are scanned and copied 16 or 32 bytes
// at a time with SSE2, which every amd64 processor has, and escapes are
// written in the same loop. Event content has a newline or quote every few
// dozen bytes, so the cost per escape matters as much as the scan; in Go
// both together cost more than hashing the output.
//
//go:noescape
func escapeASCII(dst []byte, s string) (read, written int)
