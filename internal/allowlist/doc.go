// Package allowlist decides whether a shell command line runs only
// programs on an allowlist.
//
// # Parsing
//
// The line is parsed with mvdan.cc/sh/v3/syntax, the shell parser behind
// shfmt, in the dialect of the shell that will run it (both POSIX and Bash
// when that shell is sh, because /bin/sh is dash on some systems and bash on
// others, and the two disagree on quoting). Every simple command anywhere in
// the line counts: in pipelines, lists, subshells, groups, loops,
// conditionals, function bodies, command and process substitutions and
// here-documents. A line is allowed only when every one of them is matched
// by an entry, and no tool model below refuses it.
//
// # Entries
//
// An entry is split on white space. Its first word is the program: a bare
// name matches that command name, or an absolute path that is the same
// file as the name on PATH; an absolute path matches the same file. Its
// other words, if any, are an argument prefix, matched on the parsed words
// (after quote removal) as Codex's prefix rules are: "git status" allows
// "git status --short" and not "git log" or "git -c x=y status". A word
// only known at run time ($x) never equals a prefix word. Entries cannot
// hold a word with a space in it; quotes in an entry are kept as written.
//
// The model of the listed tool (below) still applies to the words after
// an entry's prefix, but not to the prefix itself: an operator who lists
// "python3 -m pytest" means -m pytest, so that entry allows "python3 -m
// pytest -x tests" while a bare "python3" entry refuses every -m. A
// command is allowed when any entry that matches it leaves no finding.
//
// # What never runs
//
// Never allowed, because the program it runs is only known at run time: a
// command name that is not a plain word ($x, $(x), globs, ~); eval, exec,
// source and ".", command, builtin, trap, alias, enable, hash, fc, let,
// mapfile; shells (sh -c, bash script.sh, unless an entry names that
// script as a prefix); awk, xargs and the programs that run their
// arguments as a command (watch, flock, chroot, su, strace …); arithmetic
// that reads variables (bash evaluates a[$(cmd)] inside a variable's
// value); indirect and @-transform parameter expansions; function
// definitions that shadow a listed name; variable declarations other than
// a listed export of accepted keys; assignments (FOO=x cmd, env FOO=x,
// export) to variables that hand a modelled tool its options or a program
// (TAR_OPTIONS, ZIPOPT, ZIP, UNZIP, UNZIPOPT, RSYNC_RSH, RSYNC_CONNECT_PROG,
// PYTHONINSPECT), besides those the caller's AssignKey refuses. Output
// redirections to files other than /dev/null, and any redirection to or
// from /dev/tcp or /dev/udp, are not allowed either.
//
// The wrappers env, nice, nohup, setsid, stdbuf, sudo and timeout are
// allowed when they are listed themselves and the command they wrap passes
// the same check; env -S (--split-string, in any abbreviation) never does.
//
// # Tool models
//
// A bare name keeps its meaning, but the checker knows the options through
// which the common tools run a program named in an argument, and reads
// them the way GNU getopt_long does: bundled short options (-ne'…'),
// values attached or in the next word, --name=value, abbreviated long
// names (--ex for --expression: an abbreviation counts as every option it
// could stand for), and "--" to end the options. A word only known at run
// time where one of these tools reads an option is refused, since it could
// be any option. The refusal names the construct, for example "sed option
// --expr= (--expression) runs a script that may execute commands (e
// command)". Refused:
//
//   - sed: a script (from -e/--expression, or the first operand) with the
//     e command or the e flag of s, or w/W (they write files); -f/--file.
//     A label (":a") ends at ";" as in GNU sed.
//   - git: -c, --config-env, --exec-path; a subcommand that is not one of
//     git's own commands (an alias, which can be "!command", or a git-NAME
//     program); git config that sets, adds, unsets, renames or edits
//     anything (any key can name a program: core.fsmonitor, core.pager,
//     alias.*); --upload-pack, --receive-pack, --exec, --extcmd,
//     --open-files-in-pager, --template, --config and --tool in any
//     subcommand; rebase -x, grep -O, clone -u/-c, bisect run, submodule
//     foreach; difftool, mergetool, filter-branch, send-email, instaweb,
//     daemon, shell, for-each-repo, credential.
//   - tar: --checkpoint-action, --to-command, -I/--use-compress-program,
//     --rsh-command, --rmt-command, -F/--info-script/--new-volume-script,
//     also in the old-style letter bundle (tar cIf …).
//   - ssh and scp: -F (a configuration file), -I (a PKCS#11 library), -o
//     with ProxyCommand, LocalCommand, PermitLocalCommand,
//     KnownHostsCommand, PKCS11Provider, SecurityKeyProvider, Include or
//     Match; scp -S and -D. rsync: -e/--rsh, --rsync-path, -M/--remote-option,
//     --config, --daemon. wget: --use-askpass, --config, -e/--execute
//     use_askpass. zip: -TT/--unzip-command. sort: --compress-program.
//     find: -exec, -execdir, -ok, -okdir, -fprint*, -fls, -delete.
//   - Interpreters (python, perl, node, ruby, php, lua and their versioned
//     names; bun, deno, Rscript, julia, osascript, tclsh by a smaller
//     table): the options that carry program text or load code (python
//     -c, -m, -i, -W with a module category; perl -e, -E, -m, -M, -d;
//     node -e, -p, -r, --eval, --print, --require, --import, --loader,
//     -i, --env-file, --run, --inspect; ruby -e, -r; php -r, -B, -R, -E,
//     -a, -d, -c, -z, -S, -F; lua -e, -l, -i). Program text read from
//     standard input is inline code too: an interpreter with no script
//     operand (whatever feeds its standard input: a pipe, a here-document,
//     a redirection, or later process write, paste and send-keys), and a
//     script named -, /dev/stdin, /dev/fd/N or /proc/…/fd/N. Options that
//     only print and exit (--version, -h) read no program.
//   - bash builtins that evaluate a subscript in a variable name must be
//     given plain names: printf -v, test and [ with -v or -R, read
//     (-a and its names), unset, wait -p, getopts. A word only known at
//     run time where such a name may go is refused too
//     (x='y[$(cmd)]'; test -v "$x").
//
// # What a listed program can still do
//
// The check is about what the shell starts, and about the options above.
// A listed program runs whatever its arguments and inputs make it run:
// python3 script.py runs any script, including one another listed program
// wrote or downloaded (wget, tar -x, git clone, sed -i); make, npm and go
// run their build files; git runs hooks and the programs its existing
// configuration names (a .git/config that a listed tool edited, or one in
// an unpacked archive); git commit or git rebase -i start an editor and
// git log on a terminal starts a pager, and keys sent to that session
// reach the editor or pager, which can run commands; options of tools this
// package does not model are not looked at. List programs as you would
// hand them to the model directly, prefer argument-prefix entries for the
// powerful ones, and use the sandbox host as the boundary against a
// hostile command.
package allowlist
