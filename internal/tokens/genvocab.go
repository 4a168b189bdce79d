//go:build ignore

// genvocab writes the embedded vocabularies: for each encoding, every
// token's bytes in rank order, each as a uvarint length and the bytes (a
// rank with no token is length 0). The tokens come from
// github.com/tiktoken-go/tokenizer, whose Decode of one rank is that
// token. Run from this directory: go run genvocab.go
package main

import (
	"encoding/binary"
	"fmt"
	"log"
	"os"

	"github.com/tiktoken-go/tokenizer"
)

func main() {
	for _, enc := range []tokenizer.Encoding{tokenizer.O200kBase, tokenizer.Cl100kBase, tokenizer.P50kBase, tokenizer.R50kBase} {
		codec, err := tokenizer.Get(enc)
		if err != nil {
			log.Fatal(err)
		}
		var out []byte
		ranks, missing := 0, 0
		for rank := uint(0); rank < 1<<20; rank++ {
			token, err := codec.Decode([]uint{rank})
			if err != nil {
				token = ""
				missing++
			}
			out = binary.AppendUvarint(out, uint64(len(token)))
			out = append(out, token...)
			if err == nil {
				ranks = int(rank) + 1
			}
			if missing > 4096 {
				break
			}
		}
		// Trim the trailing empty ranks written after the last token.
		out = trimTrailing(out, ranks)
		name := "vocab/" + string(enc) + ".tok"
		if err := os.WriteFile(name, out, 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d ranks, %d bytes\n", name, ranks, len(out))
	}
}

// trimTrailing keeps the first n entries of the encoded list.
func trimTrailing(b []byte, n int) []byte {
	off := 0
	for range n {
		l, k := binary.Uvarint(b[off:])
		off += k + int(l)
	}
	return b[:off]
}
