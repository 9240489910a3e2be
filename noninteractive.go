package bgexec

// NonInteractiveEnv returns the environment entries ("KEY=VALUE") that
// [Config.NonInteractive] adds to every child, a fresh slice each call:
//
//   - GIT_TERMINAL_PROMPT=0: git fails instead of asking for a username
//     or password on the terminal;
//   - GCM_INTERACTIVE=never: Git Credential Manager never opens a prompt;
//   - DEBIAN_FRONTEND=noninteractive: apt and dpkg take the default
//     answer to every debconf question;
//   - PIP_NO_INPUT=1: pip fails instead of asking (credentials, confirmations).
//
// Settings that answer "yes" on the user's behalf (NPM_CONFIG_YES,
// CONDA_ALWAYS_YES, apt's -y) are deliberately left out: skipping a
// question is safe, agreeing to an install nobody asked for is not. npx
// and conda ask nothing when stdin is not a terminal (pipe sessions), and
// read EOF and stop when it is closed.
//
// Safe for concurrent use.
func NonInteractiveEnv() []string {
	return []string{
		"GIT_TERMINAL_PROMPT=0",
		"GCM_INTERACTIVE=never",
		"DEBIAN_FRONTEND=noninteractive",
		"PIP_NO_INPUT=1",
	}
}
