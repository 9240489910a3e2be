package envpolicy

// The default key lists. They are data, kept here in one place with the
// reason for each entry. [Default] copies them; nothing else reads or writes
// them.
//
// A key is dropped when it makes a program load or run code, a library, a
// startup file or a hook named by its value, and ordinary use does not need
// it inherited. A key is override-only when it changes what runs in the same
// way but is commonly set on purpose (so an inherited value is the user's
// choice), or when it changes behaviour without loading code itself. When in
// doubt a key is override-only: dropping an inherited key breaks setups
// silently, refusing an override fails loudly.
//
// The first block of each list is the original contract, in its order; the
// later blocks were added after a review of the tools those keys belong to.
// Some override-only keys of the contract load code as well (OPENSSL_CONF,
// CLASSPATH, PHPRC, GIT_CONFIG_*); they keep the contract's treatment.
//
// Not covered, because a key list cannot express them:
// CARGO_TARGET_<triple>_LINKER and _RUNNER (a prefix would also refuse
// CARGO_TARGET_DIR), and make variables other than CC, CXX and CPP, which
// make imports from the environment and recipes may run (RM, AR, ...).

// defaultDroppedKeys are removed from the inherited environment and refused
// as overrides. Never mutated.
var defaultDroppedKeys = []string{
	"NODE_OPTIONS",           // node: extra options (--require, --import) for every node
	"NODE_PATH",              // node: extra module search path
	"PYTHONHOME",             // python: where the standard library is loaded from
	"PYTHONPATH",             // python: extra module search path
	"PERL5LIB",               // perl: extra library search path
	"PERL5OPT",               // perl: extra switches (-M loads a module) for every perl
	"RUBYLIB",                // ruby: extra library search path
	"RUBYOPT",                // ruby: extra switches (-r loads a library) for every ruby
	"BASH_ENV",               // bash: file sourced by every non-interactive bash
	"ENV",                    // sh, ksh, bash in POSIX mode: file sourced by interactive shells
	"BROWSER",                // program run to open a URL (python webbrowser, xdg-open, ...)
	"GIT_EDITOR",             // git: editor command run for messages
	"GIT_EXTERNAL_DIFF",      // git: program run instead of the built-in diff
	"GIT_EXEC_PATH",          // git: directory the git-* subcommands are run from
	"GIT_SEQUENCE_EDITOR",    // git: editor command run by rebase -i
	"GIT_TEMPLATE_DIR",       // git: templates, hooks included, copied by init and clone
	"GIT_SSL_NO_VERIFY",      // git: turns TLS certificate checks off
	"GIT_SSL_CAINFO",         // git: CA bundle that decides which servers are trusted
	"GIT_SSL_CAPATH",         // git: CA directory, likewise
	"CC",                     // C compiler run by make, configure, cgo and build scripts
	"CXX",                    // C++ compiler, likewise
	"CARGO_BUILD_RUSTC",      // cargo: the rustc program to run
	"CMAKE_C_COMPILER",       // cmake: C compiler to run
	"CMAKE_CXX_COMPILER",     // cmake: C++ compiler to run
	"SHELL",                  // shell run by editors, terminal tools and anything that spawns $SHELL
	"SHELLOPTS",              // bash: set -o options at startup (xtrace expands PS4)
	"PS4",                    // sh: xtrace prompt, expanded with command substitution
	"GCONV_PATH",             // glibc iconv: directory gconv modules (.so) are loaded from
	"IFS",                    // sh: field separators; an inherited value reshapes commands in old shells
	"SSLKEYLOGFILE",          // TLS libraries write session keys to this file
	"JAVA_TOOL_OPTIONS",      // JVM: options (-javaagent, -agentpath) for every JVM
	"_JAVA_OPTIONS",          // HotSpot: options for every JVM, after the command line
	"JDK_JAVA_OPTIONS",       // java launcher 9+: options for every java command
	"PYTHONBREAKPOINT",       // python: callable imported and run by breakpoint()
	"DOTNET_STARTUP_HOOKS",   // .NET: assemblies whose StartupHook runs before Main
	"DOTNET_ADDITIONAL_DEPS", // .NET host: extra deps.json files adding assemblies
	"GLIBC_TUNABLES",         // glibc: tunables parsed by ld.so in every process
	"MAVEN_OPTS",             // mvn: JVM options (-javaagent)
	"SBT_OPTS",               // sbt: JVM options
	"GRADLE_OPTS",            // gradle, gradlew: JVM options
	"ANT_OPTS",               // ant: JVM options

	// node, bun
	"NODE_REPL_EXTERNAL_MODULE", // node: module loaded in place of the built-in REPL
	"BUN_OPTIONS",               // bun: extra options (--preload) for every bun
	"BUN_INSPECT_PRELOAD",       // bun: module preloaded as with --preload

	// python
	"PYTHONEXECUTABLE",    // python (macOS): taken as sys.executable, from which the prefix (stdlib, site-packages) is found
	"PYTHONPLATLIBDIR",    // python: overrides sys.platlibdir, the directory stdlib and extension modules load from
	"PYTHONPYCACHEPREFIX", // python: bytecode (.pyc) is read from this tree instead of __pycache__

	// perl
	"PERLLIB",    // perl: library search path when PERL5LIB is unset
	"PERL5SHELL", // perl (Windows): shell run by system and backticks

	// ruby
	"RUBYSHELL",        // ruby (Windows): shell run by system and backticks
	"RUBYPATH",         // ruby -S: directories the script to run is looked up in
	"RUBYGEMS_GEMDEPS", // rubygems: Gemfile evaluated and activated at every ruby startup

	// shells
	"BASH_LOADABLES_PATH", // bash: directories the shared objects of `enable -f` are loaded from
	"FPATH",               // ksh, zsh: directories autoloaded functions are read from (ksh: also for unknown commands)

	// glibc
	"GETCONF_DIR", // glibc getconf -v <env>: directory a per-environment helper is run from (on targets that delegate)

	// make, cmake
	"MAKEFILES",                   // GNU make: makefiles read before the others
	"CMAKE_TOOLCHAIN_FILE",        // cmake 3.21+: toolchain file (CMake code) for a new build tree
	"CMAKE_C_COMPILER_LAUNCHER",   // cmake 3.17+: program run in front of every C compile
	"CMAKE_CXX_COMPILER_LAUNCHER", // cmake 3.17+: program run in front of every C++ compile
	"CMAKE_C_LINKER_LAUNCHER",     // cmake 3.21+: program run in front of every C link
	"CMAKE_CXX_LINKER_LAUNCHER",   // cmake 3.21+: program run in front of every C++ link

	// GCC, clang
	"CPP",                  // C preprocessor run by configure and make's built-in rules, like CC
	"GCC_EXEC_PREFIX",      // gcc: prefix the driver runs cc1, as and collect2 from
	"COMPILER_PATH",        // gcc, clang: directories the driver runs its subprograms from
	"GCC_COMPARE_DEBUG",    // gcc: a value starting with '-' adds options to a second compile (-fplugin=x.so)
	"CCC_OVERRIDE_OPTIONS", // clang: edits the driver command line (can add -fplugin, -Xclang -load, -B)

	// rust, cargo
	"RUSTC",                               // cargo: the rustc program to run, like CARGO_BUILD_RUSTC
	"RUSTC_WRAPPER",                       // cargo: program run in front of every rustc
	"CARGO_BUILD_RUSTC_WRAPPER",           // cargo: same as RUSTC_WRAPPER
	"RUSTC_WORKSPACE_WRAPPER",             // cargo: program run in front of rustc for workspace members
	"CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER", // cargo: same as RUSTC_WORKSPACE_WRAPPER
	"RUSTDOC",                             // cargo: the rustdoc program to run
	"CARGO_BUILD_RUSTDOC",                 // cargo: same as RUSTDOC

	// java, JVM
	"JAVA_OPTS",           // launcher scripts (gradlew, sbt, catalina.sh, ...): JVM options (-javaagent)
	"JAVA_OPTIONS",        // launcher scripts (jetty.sh, WebLogic): JVM options
	"IBM_JAVA_OPTIONS",    // IBM J9, OpenJ9: options for every JVM, like JAVA_TOOL_OPTIONS
	"OPENJ9_JAVA_OPTIONS", // OpenJ9: options for every JVM, like JAVA_TOOL_OPTIONS
	"MAVEN_ARGS",          // mvn 3.9+: extra arguments (plugin goals, -Dmaven.ext.class.path)
	"ANT_ARGS",            // ant: extra arguments (-lib, -listener load classes)

	// .NET, mono
	"DOTNET_SHARED_STORE", // .NET host: runtime package store assemblies are resolved from
	"DOTNET_GCName",       // CoreCLR: standalone GC library to load
	"COMPlus_GCName",      // CoreCLR: same as DOTNET_GCName
	"DOTNET_GCPath",       // CoreCLR 9+: standalone GC library to load, by path
	"COMPlus_GCPath",      // CoreCLR: same as DOTNET_GCPath
	"DOTNET_JitName",      // CoreCLR: JIT library to load
	"COMPlus_JitName",     // CoreCLR: same as DOTNET_JitName
	"DOTNET_AltJitName",   // CoreCLR: alternative JIT library to load
	"COMPlus_AltJitName",  // CoreCLR: same as DOTNET_AltJitName
	"MONO_ENV_OPTIONS",    // mono: extra runtime options (--profile, --debugger-agent) for every mono
	"MONO_PATH",           // mono: assembly search path

	// lua (LUA_INIT_5_x is a dropped prefix)
	"LUA_INIT", // lua: chunk, or @file, run before the script

	// tcl
	"TCLLIBPATH", // tcl: front of auto_path, whose pkgIndex.tcl files run on package require

	// R
	"R_PROFILE",      // R, Rscript: site profile (R code) sourced at startup
	"R_PROFILE_USER", // R, Rscript: user profile (R code) sourced at startup
	"R_ENVIRON",      // R, Rscript: site environ file read at startup (sets R_PROFILE, R_LIBS)
	"R_ENVIRON_USER", // R, Rscript: user environ file, likewise

	// man, groff
	"GROFF_BIN_PATH", // groff: searched before PATH for the programs groff runs
}

// defaultDroppedPrefixes are the dropped key prefixes. Never mutated.
var defaultDroppedPrefixes = []string{
	"DYLD_",      // macOS dyld: DYLD_INSERT_LIBRARIES, DYLD_LIBRARY_PATH, ...
	"LD_",        // ld.so: LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...
	"BASH_FUNC_", // bash: exported function definitions imported at startup

	"LUA_INIT_", // lua 5.2+: LUA_INIT_5_x, read before LUA_INIT
}

// defaultOverrideOnlyKeys are refused as overrides but kept when inherited.
// Never mutated.
var defaultOverrideOnlyKeys = []string{
	"HOME",                         // dotfiles (.bashrc, .gitconfig, .npmrc, ...) are read from it
	"GRADLE_USER_HOME",             // gradle: init scripts and properties are read from it
	"ZDOTDIR",                      // zsh: directory its startup files are read from
	"GIT_SSH_COMMAND",              // git: ssh command run for ssh remotes
	"GIT_SSH",                      // git: ssh program run for ssh remotes
	"GIT_PROXY_COMMAND",            // git: command run to reach git:// remotes
	"GIT_ASKPASS",                  // git: program run to ask for credentials
	"SSH_ASKPASS",                  // ssh: program run to ask for a passphrase
	"LESSOPEN",                     // less: input preprocessor command
	"LESSCLOSE",                    // less: input postprocessor command
	"PAGER",                        // pager run by man, git, psql, ...
	"MANPAGER",                     // man: pager program
	"GIT_PAGER",                    // git: pager program
	"EDITOR",                       // editor run by git, crontab, ...
	"VISUAL",                       // full-screen editor, likewise
	"FCEDIT",                       // bash fc: editor program
	"SUDO_EDITOR",                  // sudoedit: editor program
	"PROMPT_COMMAND",               // bash: command run before each interactive prompt
	"HISTFILE",                     // shells: file the history is written to
	"PERL5DB",                      // perl -d: debugger code loaded instead of perl5db.pl
	"PERL5DBCMD",                   // perl debugger: kept with PERL5DB
	"OPENSSL_CONF",                 // OpenSSL: config file (can load engines and providers)
	"OPENSSL_ENGINES",              // OpenSSL: directory engines (.so) are loaded from
	"PYTHONSTARTUP",                // python: file run before the interactive prompt
	"WGETRC",                       // wget: config file
	"CURL_HOME",                    // curl: directory .curlrc is read from
	"CLASSPATH",                    // java: class search path
	"CGO_CFLAGS",                   // cgo: C compiler flags (-fplugin=, -B)
	"CGO_LDFLAGS",                  // cgo: linker flags
	"GOFLAGS",                      // go: default flags for every go command (-toolexec, -modfile)
	"CORECLR_PROFILER_PATH",        // CoreCLR: profiler library to load
	"PHPRC",                        // php: php.ini location (auto_prepend_file, extension=)
	"PHP_INI_SCAN_DIR",             // php: extra .ini directories, likewise
	"DENO_DIR",                     // deno: module cache code is run from
	"BUN_CONFIG_REGISTRY",          // bun: package registry
	"YARN_RC_FILENAME",             // yarn: name of the .yarnrc.yml to read (yarnPath, plugins)
	"HTTP_PROXY",                   // proxy for HTTP: sees and changes traffic
	"HTTPS_PROXY",                  // proxy for HTTPS, likewise
	"ALL_PROXY",                    // proxy for all protocols, likewise
	"NO_PROXY",                     // hosts that bypass the proxy
	"NODE_TLS_REJECT_UNAUTHORIZED", // node: 0 turns TLS certificate checks off
	"NODE_EXTRA_CA_CERTS",          // node: extra trusted CAs
	"SSL_CERT_FILE",                // OpenSSL, Go: trusted CA bundle
	"SSL_CERT_DIR",                 // OpenSSL, Go: trusted CA directory
	"REQUESTS_CA_BUNDLE",           // python requests: trusted CA bundle
	"CURL_CA_BUNDLE",               // curl: trusted CA bundle
	"DOCKER_HOST",                  // docker: daemon the CLI talks to
	"DOCKER_TLS_VERIFY",            // docker: TLS check for the daemon
	"DOCKER_CERT_PATH",             // docker: client certificates
	"DOCKER_CONTEXT",               // docker: context (daemon endpoint) to use
	"PIP_INDEX_URL",                // pip: package index
	"PIP_PYPI_URL",                 // pip: package index
	"PIP_EXTRA_INDEX_URL",          // pip: extra package index
	"PIP_CONFIG_FILE",              // pip: config file (indexes)
	"PIP_FIND_LINKS",               // pip: extra package locations
	"PIP_TRUSTED_HOST",             // pip: hosts exempt from TLS checks
	"UV_INDEX",                     // uv: package index
	"UV_INDEX_URL",                 // uv: package index
	"UV_EXTRA_INDEX_URL",           // uv: extra package index
	"UV_DEFAULT_INDEX",             // uv: package index
	"LIBRARY_PATH",                 // gcc, clang: link-time library search path
	"CPATH",                        // gcc, clang: header search path
	"C_INCLUDE_PATH",               // gcc, clang: C header search path
	"CPLUS_INCLUDE_PATH",           // gcc, clang: C++ header search path
	"OBJC_INCLUDE_PATH",            // gcc, clang: Objective-C header search path
	"GOPROXY",                      // go: module proxy
	"GONOSUMCHECK",                 // go: listed with GONOSUMDB (not read by the go command)
	"GONOSUMDB",                    // go: modules exempt from checksum verification
	"GONOPROXY",                    // go: modules fetched without the proxy
	"GOPRIVATE",                    // go: modules exempt from proxy and checksum database
	"GOENV",                        // go: go env file (any go variable)
	"GOPATH",                       // go: module cache and installed binaries
	"PYTHONUSERBASE",               // python: user site-packages location
	"VIRTUAL_ENV",                  // python tools: environment whose interpreter and packages run
	"LUA_PATH",                     // lua: module search path
	"LUA_CPATH",                    // lua: C module (.so) search path
	"GEM_HOME",                     // rubygems: gem installation directory
	"GEM_PATH",                     // rubygems: gem search path
	"BUNDLE_GEMFILE",               // bundler: Gemfile (Ruby code) to use
	"COMPOSER_HOME",                // composer: global config and plugins
	"XDG_CONFIG_HOME",              // config directory of git, fish, nvim, ...
	"AWS_CONFIG_FILE",              // aws: config file (credential_process runs commands)

	// make
	"MAKEFLAGS",    // GNU make: options and assignments (SHELL=, --eval); carries the jobserver between makes
	"GNUMAKEFLAGS", // GNU make 4+: same as MAKEFLAGS

	// python
	"PYTHONWARNINGS",     // python: a category field imports the named module; often set to ignore
	"IPYTHONDIR",         // IPython: profile directory whose startup/*.py files run
	"JUPYTER_CONFIG_DIR", // jupyter: directory whose *_config.py files run
	"UV_CONFIG_FILE",     // uv: config file (indexes), like PIP_CONFIG_FILE

	// ruby, php
	"IRBRC",    // irb: startup file (Ruby code) of the interactive console, like PYTHONSTARTUP
	"COMPOSER", // composer: composer.json whose scripts run, like BUNDLE_GEMFILE

	// shells
	"BASHOPTS", // bash: shopt options turned on before startup files
	"CDPATH",   // sh: a script's relative cd can land in another directory

	// sudo, ssh
	"SUDO_ASKPASS",        // sudo -A: program run to read the password
	"SSH_ASKPASS_REQUIRE", // ssh: forces use of the SSH_ASKPASS program

	// git (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT, GIT_CONFIG_GLOBAL, ... are the
	// GIT_CONFIG_ prefix: git passes them to its own children, containers set them)
	"GIT_DIR",            // git: repository whose config (core.fsmonitor, aliases) and hooks apply; set for hooks
	"GIT_COMMON_DIR",     // git: directory config and hooks are read from, likewise
	"GIT_ALLOW_PROTOCOL", // git: can allow ext::, which runs commands; often set to restrict protocols

	// GCC, clang
	"CFLAGS",   // C compiler flags: -fplugin=, -B, -wrapper load or run programs
	"CXXFLAGS", // C++ compiler flags, likewise
	"CPPFLAGS", // preprocessor flags, likewise
	"LDFLAGS",  // linker flags (-B, -fuse-ld=)

	// cmake
	"CMAKE_PREFIX_PATH", // cmake: prefixes find_package loads <Pkg>Config.cmake (CMake code) from

	// go
	"GOROOT",             // go: toolchain whose compile and link tools run
	"GOMODCACHE",         // go: module cache, trusted without re-hashing (like GOPATH)
	"GOWORK",             // go: go.work file whose use and replace choose the code built
	"GOSUMDB",            // go: checksum database; off skips verification (like GONOSUMDB)
	"GOINSECURE",         // go: modules fetched without TLS or checksum checks
	"GOAUTH",             // go 1.24+: commands run to get credentials
	"GOPACKAGESDRIVER",   // go/packages (gopls, linters): driver program run
	"CGO_CPPFLAGS",       // cgo: preprocessor flags, like CGO_CFLAGS
	"CGO_CXXFLAGS",       // cgo: C++ compiler flags, like CGO_CFLAGS
	"CGO_FFLAGS",         // cgo: Fortran compiler flags, like CGO_CFLAGS
	"CGO_CFLAGS_ALLOW",   // cgo: widens the #cgo CFLAGS a package may use (-fplugin=)
	"CGO_CPPFLAGS_ALLOW", // cgo: likewise for CPPFLAGS
	"CGO_CXXFLAGS_ALLOW", // cgo: likewise for CXXFLAGS
	"CGO_FFLAGS_ALLOW",   // cgo: likewise for FFLAGS
	"CGO_LDFLAGS_ALLOW",  // cgo: likewise for LDFLAGS

	// rust, cargo
	"RUSTFLAGS",                  // rustc flags (-C linker=, -Z ...) for every crate
	"CARGO_ENCODED_RUSTFLAGS",    // cargo: same as RUSTFLAGS
	"CARGO_BUILD_RUSTFLAGS",      // cargo: same as RUSTFLAGS
	"RUSTDOCFLAGS",               // rustdoc flags, likewise
	"CARGO_ENCODED_RUSTDOCFLAGS", // cargo: same as RUSTDOCFLAGS
	"CARGO_BUILD_RUSTDOCFLAGS",   // cargo: same as RUSTDOCFLAGS
	"CARGO_HOME",                 // cargo: config.toml there sets wrappers, linkers and runners
	"RUSTUP_HOME",                // rustup: directory the toolchains run from

	// java, .NET
	"JAVA_HOME",   // wrapper scripts (gradlew, mvn) run $JAVA_HOME/bin/java
	"DOTNET_ROOT", // .NET apphost: loads hostfxr and the runtime from here (DOTNET_ROOT_<arch> is a prefix)

	// R, tcl/tk
	"R_LIBS",      // R: package library path, like GEM_PATH
	"R_LIBS_USER", // R: user package library
	"R_LIBS_SITE", // R: site package library
	"TCL_LIBRARY", // tcl: directory whose init.tcl runs at startup; bundled Python/Tk installs set it
	"TK_LIBRARY",  // tk: directory whose tk.tcl runs at startup, likewise

	// openssl
	"OPENSSL_MODULES",      // OpenSSL 3: directory providers (.so) are loaded from, like OPENSSL_ENGINES
	"OPENSSL_CONF_INCLUDE", // OpenSSL 3: base directory of .include in the config, like OPENSSL_CONF

	// less, man
	"LESS",             // less: options (--lesskey-src can set LESSOPEN)
	"LESSKEY",          // less: key file whose #env section can set LESSOPEN
	"LESSKEY_SYSTEM",   // less: system key file, likewise
	"LESSKEYIN",        // less: key source file, likewise
	"LESSKEYIN_SYSTEM", // less: system key source file, likewise
	"LESSEDIT",         // less: editor command of the v command
	"MANOPT",           // man: default options (--pager)
	"MANROFFOPT",       // man: formatter options (-U allows unsafe groff requests)

	// vim
	"VIMINIT",      // vim: Ex commands run instead of the vimrc (XDG setups use it)
	"GVIMINIT",     // gvim: likewise for the gvimrc
	"EXINIT",       // ex, vi, vim: Ex commands run at startup
	"VIM",          // vim: directory the system vimrc is read from
	"VIMRUNTIME",   // vim: directory runtime scripts (defaults.vim, plugins) run from
	"NVIM_APPNAME", // neovim: config directory (init.lua) to load

	// fish and other XDG users
	"XDG_CONFIG_DIRS", // system config directories (autostart, fish vendor files)
	"XDG_DATA_HOME",   // fish: vendor_conf.d and functions are read from it
	"XDG_DATA_DIRS",   // fish: vendor_conf.d and functions; set by desktop sessions

	// docker, kubectl
	"DOCKER_CONFIG", // docker: config.json names credential helpers run as programs
	"KUBECONFIG",    // kubectl: exec credential plugins run commands

	// glibc
	"HOSTALIASES",      // glibc resolver: file of host name aliases
	"RESOLV_HOST_CONF", // older glibc resolver: host.conf to read
	"LOCPATH",          // glibc: locale data files are loaded from here
	"NLSPATH",          // catopen: message catalogs, whose strings may serve as printf formats

	// archivers, rsync, python: options or programs read from the environment
	"TAR_OPTIONS",        // GNU tar: options (--checkpoint-action=exec=, --to-command, -I)
	"ZIPOPT",             // zip: options (-TT runs a command)
	"ZIP",                // zip: options, like ZIPOPT
	"UNZIP",              // unzip: options
	"UNZIPOPT",           // unzip: options, like UNZIP
	"RSYNC_RSH",          // rsync: remote shell program to run
	"RSYNC_CONNECT_PROG", // rsync: command run to reach a daemon
	"PYTHONINSPECT",      // python: interactive prompt after the script, reading code from stdin
}

// defaultOverrideOnlyPrefixes are the override-only key prefixes. Never
// mutated.
var defaultOverrideOnlyPrefixes = []string{
	"GIT_CONFIG_",       // git: GIT_CONFIG_PARAMETERS, _COUNT, _KEY_n, _GLOBAL, ... (core.fsmonitor, aliases run commands)
	"NPM_CONFIG_",       // npm: any setting (script-shell, registry, userconfig)
	"CARGO_REGISTRIES_", // cargo: registry URLs and credential providers

	"CORECLR_",     // CoreCLR profiler: CORECLR_ENABLE_PROFILING, CORECLR_PROFILER_PATH_64, ...; set by APM agents
	"DOTNET_ROOT_", // .NET apphost: DOTNET_ROOT_X64, DOTNET_ROOT_ARM64, like DOTNET_ROOT
	"LUA_PATH_",    // lua 5.2+: LUA_PATH_5_x, like LUA_PATH
	"LUA_CPATH_",   // lua 5.2+: LUA_CPATH_5_x, like LUA_CPATH
}
