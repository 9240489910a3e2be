//go:build !amd64

package session

import "bytes"

// plainPrefix returns the length of a prefix of p whose bytes are all
// printable ASCII or LF, and how many LFs it holds.
func plainPrefix(p []byte) (n, newlines int) {
	n = plainPrefixWords(p)
	return n, bytes.Count(p[:n], nl)
}
