//go:build linux

package local

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// stateMemfd returns a close-on-exec memfd for the shell's state; the
// child gets it as fd 4 through ExtraFiles.
func stateMemfd() (*os.File, error) {
	fd, err := unix.MemfdCreate("bgexec-state", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	return os.NewFile(uintptr(fd), "bgexec-state"), nil
}

// readState reads what the shell wrote, at most StateMaxBytes; a larger
// state is not read.
func readState(f *os.File) ([]byte, bool) {
	fi, err := f.Stat()
	if err != nil || fi.Size() > StateMaxBytes {
		return nil, false
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, fi.Size()))
	return data, err == nil
}
