//go:build !amd64

package session

import "testing"

// plainPrefixVariants is the word-at-a-time pass, the only one here.
func plainPrefixVariants(*testing.T) []plainPrefixVariant {
	return []plainPrefixVariant{{"plainPrefix", 8, plainPrefix}}
}
