//go:build !amd64

package session

// plainPrefix returns the length of a prefix of p whose bytes are all
// printable ASCII or LF.
func plainPrefix(p []byte) int { return plainPrefixWords(p) }
