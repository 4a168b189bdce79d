//go:build amd64 && !purego

package canonical

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

// archEscapers are the assembly escapers: the SSE2 path alone, and with
// the shuffles and AVX2 where the processor has them.
func archEscapers() []escapeImpl {
	shuffles := []bool{false}
	if escapeConf.expand != nil {
		shuffles = append(shuffles, true)
	}
	wides := []bool{false}
	if cpu.X86.HasAVX2 {
		wides = append(wides, true)
	}
	var impls []escapeImpl
	for _, shuffle := range shuffles {
		for _, wide := range wides {
			conf := newEscapeConfig(shuffle, wide)
			name := fmt.Sprintf("escapeSIMD/shuffles=%t/wide=%t", shuffle, wide)
			impls = append(impls, escapeImpl{name, func(dst []byte, s string) (int, int) {
				return escapeSIMD(dst, s, &conf)
			}})
		}
	}
	return impls
}
