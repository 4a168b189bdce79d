//go:build !unix

package tokens

// processCPUTime is unavailable on this platform; benchmarks then report 0.
func processCPUTime() int64 { return 0 }
