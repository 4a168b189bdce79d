// Package tokens counts tokens exactly for OpenAI's byte-pair encodings
// (o200k_base, cl100k_base, p50k_base, r50k_base) with vocabularies
// embedded in the binary, so counting needs no download and no file.
//
// A count is the number of tokens tiktoken's encoder produces for the text
// (no special tokens). Counting splits the text into pieces as tiktoken's
// pattern for the encoding does, written as byte loops rather than a
// regular expression, and counts each piece: one token when the piece is
// itself a token, else the number its byte-pair merges leave. A vocabulary
// is decoded on first use of its encoding.
//
// Everything here is pure: the vocabularies are data, and Cache is a
// bounded structure its owner hands to whoever counts.
package tokens
