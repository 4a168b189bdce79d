//go:build !amd64 || purego

package canonical

// archEscapers is empty: escapeASCII is escapeASCIIWords here.
func archEscapers() []escapeImpl { return nil }
