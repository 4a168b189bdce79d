// Package tokens counts tokens exactly for OpenAI's byte-pair encodings
// (o200k_base, cl100k_base, p50k_base, r50k_base) with vocabularies
// embedded in the binary, so counting needs no download and no file.
//
// A count is the number of tokens tiktoken's encoder produces for the text
// (no special tokens). Counting splits the text into pieces as tiktoken's
// pattern for the encoding does, written as byte loops rather than a
// regular expression, and counts each piece: one token when the piece is
// itself a token, else the number its byte-pair merges leave. A vocabulary
// is decoded on first use of its encoding. Names map to encodings as
// tiktoken's do, case-sensitively (Lookup).
//
// # Why not github.com/tiktoken-go/tokenizer
//
// Its vocabularies are where the embedded ones come from (genvocab.go)
// and its counts are the oracle of the tests, but it does not count here,
// for two measured reasons:
//
//   - Speed. BenchmarkCountVsTiktokenGo alternates both counters, call by
//     call, on the example lane's canonical rendering (180 KB, the bytes
//     the engine's before budget counts): in the latest run this package
//     took 0.89–1.26 ms of CPU per count with o200k_base and tiktoken-go
//     30–41 ms, 29–34 × as much (cl100k_base: 25–29 ×). Its backtracking
//     regular expression is most of that.
//   - Correctness. Its regular expression engine ends \s*[\r\n]+ at the
//     first line break of a run such as "\r\n\t\r\n", where tiktoken takes
//     the whole run, and counts one token more. The test
//     TestTiktokenGoMiscountsLineBreakRuns finds such strings among the
//     js-tiktoken reference counts (testdata/corpus), all of which this
//     package matches.
//
// Everything here is pure: the vocabularies are data, Cache is a bounded
// structure its owner hands to whoever counts, and the memo of recent
// pieces an Encoding keeps per counting goroutine holds only what the
// vocabulary determines, so it never changes a count.
package tokens
