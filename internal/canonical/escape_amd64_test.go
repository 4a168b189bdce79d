//go:build amd64 && !purego

package canonical

// archEscapers are the assembly escapers: the SSE2 path alone, and the
// shuffle path where the processor has it.
func archEscapers() []escapeImpl {
	impls := []escapeImpl{{"escapeSIMD/SSE2", func(dst []byte, s string) (int, int) {
		return escapeSIMD(dst, s, &escapeWords, nil)
	}}}
	if expandTable != nil {
		impls = append(impls, escapeImpl{"escapeSIMD/SSSE3", func(dst []byte, s string) (int, int) {
			return escapeSIMD(dst, s, &escapeWords, expandTable)
		}})
	}
	return impls
}
