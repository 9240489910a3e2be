//go:build linux

// Package memfd hands data to a child process in a sealed memory file:
// the script of a command too long for an argument, and the sandbox's
// seccomp filter.
package memfd

import (
	"os"

	"golang.org/x/sys/unix"
)

// Sealed returns a close-on-exec memfd holding data, sealed against any
// change and positioned at offset 0, so a child can read it from the
// descriptor it inherits or open it anew through /dev/fd. The seals keep
// what the child reads the data that was checked: nobody, the child
// included, can change it through /proc. The caller closes the file.
func Sealed(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_NOEXEC_SEAL)
	if err == unix.EINVAL {
		// MFD_NOEXEC_SEAL is Linux 6.3; it only keeps the file from being
		// executed, which neither a script that is sourced nor a filter needs.
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		_ = f.Close()
		return nil, err
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		_ = f.Close()
		return nil, os.NewSyscallError("fcntl", err)
	}
	return f, nil
}
