//go:build linux

package contain

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The watchdog acts only on well-formed lines from its lifeline: each
// order names one process group by its number, above 1. Run as a uid of
// its own, with a process of that uid outside its list, so that a "+ 1"
// it obeyed would kill nothing else on the machine.
func TestWatchdogRefusesMalformedOrders(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the watchdog as a spare uid")
	}
	uid := proctest.SpareUID(t)
	cred := &syscall.Credential{Uid: uid, Gid: uid}
	dir := t.TempDir()
	// The watchdog's uid must be able to create the marker if it ran the command.
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o777))
	require.NoError(t, os.Chmod(dir, 0o777))
	marker := filepath.Join(dir, "injected")
	sibling := proctest.StartSleeper(t, cred) // killable by the watchdog, never listed
	victim := proctest.StartSleeper(t, cred)  // listed properly
	sib, vic := strconv.Itoa(sibling), strconv.Itoa(victim)
	// A variable in the host's environment must not list a group either.
	t.Setenv("g_"+sib, "1")

	host, end := runWatchdog(t, "", nil, func(cmd *exec.Cmd) { cmd.SysProcAttr.Credential = cred })

	lines := []string{
		"+ 1;touch " + marker + ";:",
		"+ $(touch " + marker + ")",
		"+ `touch " + marker + "`",
		"- 1;touch " + marker,
		"+ 1", "+ 0", "+ 01", "+ 001", "+ -1", "+ -" + sib, "+ " + sib + " x", "+ 0x" + sib,
		"+ 99999999999999999999", "+", "+1", "+ ", "* " + sib, "+ " + sib + ";",
		"+n 1;touch " + marker + ";:", "+n $(touch " + marker + ")", "+n -1", "+n 0", "+n 01",
		"+n 999999999999999999999", "+n", "+nx " + sib, "n " + sib, "+n " + sib + " x",
		"+ " + vic,
	}
	_, err := host.WriteString(strings.Join(lines, "\n") + "\n")
	require.NoError(t, err)
	end(10 * time.Second)
	assert.NoFileExists(t, marker, "no injected command ran")
	assert.True(t, proctest.Untouched(t, sibling), "no malformed line made the watchdog kill a process it was not given")
	assert.True(t, proctest.PidGone(t, victim), "the well-formed line was obeyed")
}

// The watchdog freezes the registry's cgroup before its namespace scan,
// which takes seconds on a loaded machine, and kills only after it: a
// namespace freed by a kill could get its number reused by a stranger's
// before a later look. A stand-in ls notes what cgroup.freeze and
// cgroup.kill held when the scan began; a stand-in rmdir notes what
// cgroup.kill held at the end, and removes the (fake) cgroup.
func TestWatchdogFreezesBeforeItScans(t *testing.T) {
	t.Parallel()
	bin, notes, cg := t.TempDir(), t.TempDir(), t.TempDir()
	freeze, kill := filepath.Join(cg, "cgroup.freeze"), filepath.Join(cg, "cgroup.kill")
	seen := filepath.Join(notes, "seen")
	require.NoError(t, os.WriteFile(freeze, nil, 0o600))
	require.NoError(t, os.WriteFile(kill, nil, 0o600))
	ls := "#!/bin/sh\n{ printf 'scan freeze=%s kill=%s\\n' \"$(cat " + freeze + ")\" \"$(cat " + kill + ")\"; } >> " + seen + " 2>&1\nexec /bin/ls \"$@\"\n"
	proctest.WriteExecutable(t, filepath.Join(bin, "ls"), []byte(ls), 0o700)
	rmdir := "#!/bin/sh\n[ \"$1\" = " + cg + " ] && { printf 'end kill=%s\\n' \"$(cat " + kill + ")\"; } >> " + seen + " 2>&1\nrm -rf -- \"$1\"\n"
	proctest.WriteExecutable(t, filepath.Join(bin, "rmdir"), []byte(rmdir), 0o700)

	host, end := runWatchdog(t, cg, nil, func(cmd *exec.Cmd) {
		cmd.Env = []string{"PATH=" + bin + ":/usr/sbin:/usr/bin:/sbin:/bin"}
	})
	// A namespace no process is in: one look, which finds nothing.
	_, err := host.WriteString("+n 12345\n")
	require.NoError(t, err)
	end(30 * time.Second)
	got, err := os.ReadFile(seen)
	require.NoError(t, err, "the watchdog scanned the namespaces")
	assert.Equal(t, "scan freeze=1 kill=\nend kill=1\n", string(got), "frozen before the one look, killed after it")
	assert.NoDirExists(t, cg, "the watchdog removed the cgroup")
}

// At an orderly Close with nothing listed the watchdog only kills what is
// left in the registry's cgroup and exits: no freeze, no scan, and the
// cgroup stays for the host to remove. With a group still listed (a
// Close whose sessions did not all end) it does all of its work: the
// group is killed. The cgroup here is a directory with the two control
// files, so the test sees what was written to them.
func TestWatchdogQuitsAtAnOrderlyClose(t *testing.T) {
	t.Parallel()
	t.Run("nothing listed", func(t *testing.T) {
		t.Parallel()
		cg := t.TempDir()
		freeze, kill := filepath.Join(cg, "cgroup.freeze"), filepath.Join(cg, "cgroup.kill")
		require.NoError(t, os.WriteFile(freeze, nil, 0o600))
		require.NoError(t, os.WriteFile(kill, nil, 0o600))
		sleeper := proctest.StartSleeper(t, nil)
		w, err := StartWatchdog(cg)
		require.NoError(t, err)
		w.Watch(sleeper)
		w.Forget(sleeper)
		w.Close() // waits for the watchdog processes
		got, err := os.ReadFile(kill)
		require.NoError(t, err)
		assert.Equal(t, "1\n", string(got), "what is left in the cgroup is killed")
		got, err = os.ReadFile(freeze)
		require.NoError(t, err)
		assert.Empty(t, string(got), "no freeze: the full clean-up did not run")
		assert.True(t, proctest.Untouched(t, sleeper), "a forgotten group is not killed")
	})
	t.Run("a group listed", func(t *testing.T) {
		t.Parallel()
		sleeper := proctest.StartSleeper(t, nil)
		w, err := StartWatchdog("")
		require.NoError(t, err)
		w.Watch(sleeper)
		w.Close()
		assert.True(t, proctest.PidGone(t, sleeper), "the listed group was killed")
	})
}
