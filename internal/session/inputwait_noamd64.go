//go:build linux && !amd64

package session

// legacyKind: newer architectures (arm64, riscv64) have only the p-calls.
func legacyKind(int64) callKind { return callOther }
