package session

import "golang.org/x/sys/cpu"

// plainPrefix returns the length of a prefix of p, in whole 16-byte blocks
// (32 with AVX2), whose bytes are all printable ASCII or LF, and how many
// LFs it holds (plain_amd64.s).
func plainPrefix(p []byte) (n, newlines int) {
	if cpu.X86.HasAVX2 {
		return plainPrefixAVX2(p)
	}
	return plainPrefixSSE2(p)
}

//go:noescape
func plainPrefixSSE2(p []byte) (n, newlines int)

//go:noescape
func plainPrefixAVX2(p []byte) (n, newlines int)
