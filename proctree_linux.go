//go:build linux

package bgexec

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procRef names one process across time: a pid plus its start time, so a
// reused pid is not mistaken for the original.
type procRef struct {
	pid   int
	start string
	comm  string
}

type procStat struct {
	ppid  int
	start string
	comm  string
	state byte
}

// readStat parses /proc/<pid>/stat.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 >= len(s) {
		return procStat{}, false
	}
	f := strings.Fields(s[end+2:])
	// After the comm: state(0) ppid(1) … starttime(19).
	if len(f) < 20 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{ppid: ppid, start: f[19], comm: s[open+1 : end], state: f[0][0]}, true
}

// descendants lists the live descendants of root (root excluded), walking
// the parent links of every process in /proc.
func descendants(root int) []procRef {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := make(map[int][]int)
	stats := make(map[int]procStat)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			stats[pid] = st
			kids[st.ppid] = append(kids[st.ppid], pid)
		}
	}
	var out []procRef
	queue := append([]int(nil), kids[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		st := stats[pid]
		if st.state != 'Z' {
			out = append(out, procRef{pid: pid, start: st.start, comm: st.comm})
		}
		queue = append(queue, kids[pid]...)
	}
	return out
}

// alive reports whether the very same process still runs.
func (p procRef) alive() bool {
	st, ok := readStat(p.pid)
	return ok && st.start == p.start && st.state != 'Z'
}

// escapeWarning describes which of the processes seen before a kill
// survived it, or "" when none did.
func escapeWarning(before []procRef) string {
	var left []string
	for _, p := range before {
		if p.alive() {
			left = append(left, fmt.Sprintf("pid %d (%s)", p.pid, p.comm))
		}
	}
	switch len(left) {
	case 0:
		return ""
	case 1:
		return "Warning: 1 process of the session may have escaped the kill (it left the process group): " + left[0] + "."
	default:
		return fmt.Sprintf("Warning: %d processes of the session may have escaped the kill (they left the process group): %s.", len(left), strings.Join(left, ", "))
	}
}
