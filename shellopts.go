package bgexec

// shellOpts are the resolved agent-shell options of a Config.
type shellOpts struct {
	defaultEnv []string // NonInteractiveEnv() with NonInteractive; else nil
}

func resolveShellOpts(c *Config) (shellOpts, error) {
	var o shellOpts
	if c.NonInteractive {
		o.defaultEnv = NonInteractiveEnv()
	}
	return o, nil
}
