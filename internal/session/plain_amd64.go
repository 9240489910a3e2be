package session

// plainPrefix returns the length of the longest prefix of p, in whole
// 16-byte blocks, whose bytes are all printable ASCII or LF (plain_amd64.s).
//
//go:noescape
func plainPrefix(p []byte) int
