package session

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// plainPrefixVariants are the SSE2 and, where the CPU has it, the AVX2
// pass.
func plainPrefixVariants(t *testing.T) []plainPrefixVariant {
	v := []plainPrefixVariant{{"plainPrefixSSE2", 16, plainPrefixSSE2}}
	if cpu.X86.HasAVX2 {
		v = append(v, plainPrefixVariant{"plainPrefixAVX2", 32, plainPrefixAVX2})
	} else {
		t.Log("this CPU has no AVX2: plainPrefixAVX2 is not tested")
	}
	return v
}
