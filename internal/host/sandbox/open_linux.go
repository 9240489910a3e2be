//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The sandbox binds directories by descriptor (bwrap --bind-fd), opened
// here without following any symbolic link: the paths were resolved
// once, on the host, and a link put in the place of one of their
// components since (by another session, or by a sandboxed command that
// can write the parent) makes the open fail instead of redirecting the
// bind. What is opened is what bwrap binds, so a swap after the open
// changes nothing either; bwrap checks that the mount it made is the
// descriptor's directory and refuses to go on otherwise.

// openRealPath opens path (absolute, clean, with no symbolic link in it)
// as an O_PATH descriptor, failing with ELOOP when any of its components
// is a symbolic link now.
func openRealPath(path string) (*os.File, error) {
	return openRealPathWith(path, true)
}

// openRealPathWith is openRealPath; useOpenat2 false takes the fallback
// for kernels without openat2 (before 5.6), as tests do.
func openRealPathWith(path string, useOpenat2 bool) (*os.File, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return nil, fmt.Errorf("open %q: not an absolute, clean path", path)
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	defer unix.Close(root)
	rel := strings.TrimPrefix(path, "/")
	if rel == "" {
		rel = "."
	}
	fd, err := -1, unix.ENOSYS
	if useOpenat2 {
		fd, err = openat2NoLinks(root, rel)
	}
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		// No openat2 (an old kernel, or a seccomp filter that refuses
		// it): the same walk by hand, one component at a time.
		fd, err = walkNoLinks(root, rel)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open without following links", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openat2NoLinks opens rel below dir, refusing any symbolic link and any
// escape from dir. EAGAIN (a rename raced with the lookup) is retried a
// few times.
func openat2NoLinks(dir int, rel string) (int, error) {
	how := &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 8 {
		fd, err := unix.Openat2(dir, rel, how)
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
	return -1, unix.EAGAIN
}

// walkNoLinks opens rel below dir one component at a time with
// O_NOFOLLOW, refusing "..", and a symbolic link anywhere (O_PATH with
// O_NOFOLLOW opens the link itself, which the fstat then sees).
func walkNoLinks(dir int, rel string) (int, error) {
	cur, err := unix.Openat(dir, ".", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			_ = unix.Close(cur) // Best effort: ours, and only looked at.
			return -1, unix.EXDEV
		}
		next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		_ = unix.Close(cur) // Best effort: ours, and only looked at.
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			_ = unix.Close(next)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			_ = unix.Close(next)
			return -1, unix.ELOOP
		}
		cur = next
	}
	return cur, nil
}

// openBinds opens the source of each bind in ops, in order, with
// openRealPath; the caller closes them once bwrap has started.
func openBinds(ops []mountOp) ([]*os.File, error) {
	var files []*os.File
	for _, op := range ops {
		if op.kind == mountHide {
			continue
		}
		f, err := openRealPath(op.path)
		if err != nil {
			for _, f := range files {
				_ = f.Close() // Best effort: ours, and only looked at.
			}
			return nil, fmt.Errorf("sandbox: %q is not the directory that was checked: %w", op.path, err)
		}
		files = append(files, f)
	}
	return files, nil
}
