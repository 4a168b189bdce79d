//go:build !amd64 || purego

package canonical

// escapeASCII writes s to dst with the escapes of string; see
// escapeASCIIWords for the contract.
func escapeASCII(dst []byte, s string) (read, written int) {
	return escapeASCIIWords(dst, s)
}
