package sshhost

import "strconv"

// oursScript defines ours, a shell function that succeeds when process
// group pg is still the session's: its leader, while it lives, carries
// the session's tag in its environment, or, once the leader is gone, one
// of the group's members does. A group id is free for reuse once its
// leader and members are gone, so a kill sent by group id alone can reach
// an unrelated group that got the same id, on a busy node whose pids wrap
// around. Members are found by a scan of /proc with shell builtins; only
// they cost a grep. Every script here says `kill -s 0 -- -pg`, the form
// both dash and bash accept (dash refuses `kill -0 -- -pg`).
func oursScript(pg int, tag string) string {
	g := strconv.Itoa(pg)
	kv := nodeTagKey + "=" + tag
	return "ours() { e=$(tr \"\\000\" \"\\n\" </proc/" + g + "/environ 2>/dev/null);" +
		" if [ -n \"$e\" ]; then printf \"%s\\n\" \"$e\" | grep -qx " + kv + "; return; fi;" +
		" for d in /proc/[0-9]*; do read -r s <\"$d/stat\" 2>/dev/null || continue; s=${s##*)}; set -- $s;" +
		" [ \"$3\" = " + g + " ] && grep -qa " + kv + " \"$d/environ\" 2>/dev/null && return 0; done; return 1; }; "
}

// taggedScript defines tagged, a shell function that prints the pid of
// every live process carrying the session's tag, one a line. Every
// process a session starts inherits the tag, so this finds those that left
// its process group (setsid, a double fork) too; zombies, whose environment
// is gone, are not listed. One grep reads them all.
func taggedScript(tag string) string {
	return "tagged() { grep -la " + nodeTagKey + "=" + tag + " /proc/[0-9]*/environ 2>/dev/null | while read -r f; do f=${f#/proc/}; echo \"${f%/environ}\"; done; }; "
}

// signalScript sends sig to process group pg (and the scope) when the
// group is still the session's (oursScript), and to every process that
// carries the session's tag outside it (taggedScript). It exits 0 when the
// signal was sent or nothing of the session is left, 1 when the group's
// kill failed.
func signalScript(sig string, pg int, tag, unit string) string {
	g := strconv.Itoa(pg)
	s := oursScript(pg, tag) + taggedScript(tag) +
		"for p in $(tagged); do kill -s " + sig + " \"$p\" 2>/dev/null; done; " +
		"if ours; then kill -s " + sig + " -- -" + g + " 2>/dev/null || { kill -s 0 -- -" + g + " 2>/dev/null && exit 1; }; fi"
	if unit != "" {
		s += "; systemctl --user kill -s " + sig + " -- " + unit + ".scope >/dev/null 2>&1"
	}
	return s + "; exit 0"
}

// aliveScript exits 0 while a process of the session's group pg (or the
// scope), or one carrying its tag, is left. A tagged process just sent
// SIGKILL gets a second to be gone.
func aliveScript(pg int, tag, unit string) string {
	s := oursScript(pg, tag) + taggedScript(tag) + "kill -s 0 -- -" + strconv.Itoa(pg) + " 2>/dev/null && ours && exit 0; " +
		"i=0; while [ -n \"$(tagged)\" ]; do i=$((i+1)); [ $i -gt 10 ] && exit 0; sleep 0.1; done"
	if unit != "" {
		s += "; systemctl --user is-active --quiet -- " + unit + ".scope && exit 0"
	}
	return s + "; exit 1"
}

// killLostScript kills a lost session's group over a new connection, when
// the group is still the session's (oursScript), so a reused pid or group
// id is never killed. Exit 0: it is gone now; 1: some of it is left; 2:
// the pid or group belongs to other processes, which were left alone.
func killLostScript(pg int, tag, unit string) string {
	g := strconv.Itoa(pg)
	s := oursScript(pg, tag) + taggedScript(tag) +
		"r=0; if kill -s 0 -- -" + g + " 2>/dev/null || [ -e /proc/" + g + " ]; then if ours; then kill -s KILL -- -" + g + " 2>/dev/null; else r=2; fi; fi;" +
		" t=$(tagged); for p in $t; do kill -s KILL \"$p\" 2>/dev/null; done; [ $r = 2 ] && [ -z \"$t\" ] && exit 2;"
	if unit != "" {
		s += " systemctl --user kill -s KILL -- " + unit + ".scope >/dev/null 2>&1;"
	}
	s += " i=0; while { kill -s 0 -- -" + g + " 2>/dev/null && ours; } || [ -n \"$(tagged)\" ]; do i=$((i+1)); [ $i -gt 50 ] && exit 1; sleep 0.1; done; exit 0"
	return s
}

// groupMembersScript lists the live processes of group pg, and those
// carrying the session's tag outside it, but pg itself, one "pid
// command-line" line each (the command cut to 60 bytes).
func groupMembersScript(pg int, tag string) string {
	g := strconv.Itoa(pg)
	return taggedScript(tag) + "t=\" $(tagged | tr \"\\n\" \" \") \"; " +
		"for d in /proc/[0-9]*; do p=${d#/proc/}; [ \"$p\" = " + g + " ] && continue; s=$(cat \"$d/stat\" 2>/dev/null) || continue;" +
		" s=${s##*)}; set -- $s; [ \"$1\" = Z ] && continue; case \"$t\" in *\" $p \"*) ;; *) [ \"$3\" = " + g + " ] || continue;; esac;" +
		" printf \"%s %s\\n\" \"$p\" \"$(tr \"\\000\" \" \" <\"$d/cmdline\" 2>/dev/null | cut -c1-60)\"; done; exit 0"
}
