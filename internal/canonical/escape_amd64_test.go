//go:build amd64 && !purego

package canonical

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

// archEscapers are the assembly escapers: the SSE2 path alone, and with
// the shuffles and AVX2 where the processor has them.
func archEscapers() []escapeImpl {
	expands := []*[256][16]byte{nil}
	if expandTable != nil {
		expands = append(expands, expandTable)
	}
	wides := []bool{false}
	if cpu.X86.HasAVX2 {
		wides = append(wides, true)
	}
	var impls []escapeImpl
	for _, expand := range expands {
		for _, wide := range wides {
			name := fmt.Sprintf("escapeSIMD/shuffles=%t/wide=%t", expand != nil, wide)
			impls = append(impls, escapeImpl{name, func(dst []byte, s string) (int, int) {
				return escapeSIMD(dst, s, &escapeWords, expand, wide)
			}})
		}
	}
	return impls
}
