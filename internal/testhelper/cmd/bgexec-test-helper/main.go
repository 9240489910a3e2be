//go:build linux

// Command bgexec-test-helper runs one helper command of package testhelper
// (its first argument) for the tests, and exits with its code.
package main

import (
	"fmt"
	"os"

	"github.com/bgexec/bgexec/internal/testhelper"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "bgexec-test-helper: no command")
		os.Exit(2)
	}
	code, ok := testhelper.Run(os.Args[1], os.Args[2:])
	if !ok {
		fmt.Fprintln(os.Stderr, "bgexec-test-helper: unknown command", os.Args[1])
		os.Exit(2)
	}
	os.Exit(code)
}
