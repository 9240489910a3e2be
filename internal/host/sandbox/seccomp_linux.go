//go:build linux

package sandbox

import (
	"encoding/binary"
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox. They follow Docker's
// default profile for a container without capabilities: calls that change
// the kernel's global state (modules, kexec, swap, reboot, accounting),
// reach into other processes (ptrace, process_vm_*, pidfd_getfd, kcmp),
// change namespaces or mounts (old and new mount API), or widen the
// kernel's attack surface (bpf, perf, keyrings, userfaultfd, io_uring).
// Names an architecture does not have are skipped.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	"mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key",
	"iopl", "ioperm", "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog",
	"open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "uselib", "vhangup",
	"userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
}

// cloneNamespaceFlags are the clone flags that create namespaces; a clone
// with any of them fails with EPERM. (CLONE_NEWTIME shares its bit with the
// exit signal in clone's flags, and clone3 is refused as a whole.)
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// seccompProgram returns the sandbox's seccomp filter as the raw BPF
// program bwrap --seccomp reads: struct sock_filter entries in the host's
// byte order.
//
// clone3 fails with ENOSYS, as in Docker's profile: its flags sit in
// memory a filter cannot read, and C libraries fall back to clone, whose
// flags it can. A system call of another ABI than the host's (i386 through
// int 0x80 on x86_64) kills the process: the library's filter lets it
// through to the default action, so a check in front of it refuses it.
func seccompProgram() ([]byte, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	var names []string
	for _, n := range deniedSyscalls {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	groups := []seccomp.SyscallGroup{
		{Names: names, Action: seccomp.ActionErrno}, // EPERM
		{
			NamesWithCondtions: []seccomp.NameWithConditions{{
				Name:       "clone",
				Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags}},
			}},
			Action: seccomp.ActionErrno,
		},
	}
	if _, ok := info.SyscallNames["clone3"]; ok {
		groups = append(groups, seccomp.SyscallGroup{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)})
	}
	policy := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
	body, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}, body...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.NativeEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}
