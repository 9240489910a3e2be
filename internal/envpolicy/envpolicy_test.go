package envpolicy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lists below are the original contract lists, copied verbatim, so that
// the package data is checked against the contract, not against itself.
const (
	contractDroppedKeys = `NODE_OPTIONS NODE_PATH PYTHONHOME PYTHONPATH PERL5LIB
  PERL5OPT RUBYLIB RUBYOPT BASH_ENV ENV BROWSER GIT_EDITOR GIT_EXTERNAL_DIFF GIT_EXEC_PATH
  GIT_SEQUENCE_EDITOR GIT_TEMPLATE_DIR GIT_SSL_NO_VERIFY GIT_SSL_CAINFO GIT_SSL_CAPATH CC CXX
  CARGO_BUILD_RUSTC CMAKE_C_COMPILER CMAKE_CXX_COMPILER SHELL SHELLOPTS PS4 GCONV_PATH IFS
  SSLKEYLOGFILE JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS PYTHONBREAKPOINT
  DOTNET_STARTUP_HOOKS DOTNET_ADDITIONAL_DEPS GLIBC_TUNABLES MAVEN_OPTS SBT_OPTS GRADLE_OPTS ANT_OPTS`
	contractDroppedPrefixes  = `DYLD_ LD_ BASH_FUNC_`
	contractOverrideOnlyKeys = `HOME GRADLE_USER_HOME ZDOTDIR GIT_SSH_COMMAND GIT_SSH
  GIT_PROXY_COMMAND GIT_ASKPASS SSH_ASKPASS LESSOPEN LESSCLOSE PAGER MANPAGER GIT_PAGER EDITOR VISUAL
  FCEDIT SUDO_EDITOR PROMPT_COMMAND HISTFILE PERL5DB PERL5DBCMD OPENSSL_CONF OPENSSL_ENGINES
  PYTHONSTARTUP WGETRC CURL_HOME CLASSPATH CGO_CFLAGS CGO_LDFLAGS GOFLAGS CORECLR_PROFILER_PATH PHPRC
  PHP_INI_SCAN_DIR DENO_DIR BUN_CONFIG_REGISTRY YARN_RC_FILENAME HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY
  NODE_TLS_REJECT_UNAUTHORIZED NODE_EXTRA_CA_CERTS SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE
  CURL_CA_BUNDLE DOCKER_HOST DOCKER_TLS_VERIFY DOCKER_CERT_PATH DOCKER_CONTEXT PIP_INDEX_URL PIP_PYPI_URL
  PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE PIP_FIND_LINKS PIP_TRUSTED_HOST UV_INDEX UV_INDEX_URL
  UV_EXTRA_INDEX_URL UV_DEFAULT_INDEX LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH
  OBJC_INCLUDE_PATH GOPROXY GONOSUMCHECK GONOSUMDB GONOPROXY GOPRIVATE GOENV GOPATH PYTHONUSERBASE
  VIRTUAL_ENV LUA_PATH LUA_CPATH GEM_HOME GEM_PATH BUNDLE_GEMFILE COMPOSER_HOME XDG_CONFIG_HOME
  AWS_CONFIG_FILE`
	contractOverrideOnlyPrefixes = `GIT_CONFIG_ NPM_CONFIG_ CARGO_REGISTRIES_`

	pathViolation = "Security Violation: Custom 'PATH' variable is forbidden during host execution."
	marker        = "OPENCLAW_SHELL=exec"
)

// The keys added to the contract lists after a review of the variables that
// make a program load or run code chosen by their value, in list order, again
// copied so that the package data is checked against them.
const (
	addedDroppedKeys = `NODE_REPL_EXTERNAL_MODULE BUN_OPTIONS BUN_INSPECT_PRELOAD
  PYTHONEXECUTABLE PYTHONPLATLIBDIR PYTHONPYCACHEPREFIX
  PERLLIB PERL5SHELL
  RUBYSHELL RUBYPATH RUBYGEMS_GEMDEPS
  BASH_LOADABLES_PATH FPATH
  GETCONF_DIR
  MAKEFILES CMAKE_TOOLCHAIN_FILE CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER
  CMAKE_C_LINKER_LAUNCHER CMAKE_CXX_LINKER_LAUNCHER
  CPP GCC_EXEC_PREFIX COMPILER_PATH GCC_COMPARE_DEBUG CCC_OVERRIDE_OPTIONS
  RUSTC RUSTC_WRAPPER CARGO_BUILD_RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER
  CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER RUSTDOC CARGO_BUILD_RUSTDOC
  JAVA_OPTS JAVA_OPTIONS IBM_JAVA_OPTIONS OPENJ9_JAVA_OPTIONS MAVEN_ARGS ANT_ARGS
  DOTNET_SHARED_STORE DOTNET_GCName COMPlus_GCName DOTNET_GCPath COMPlus_GCPath
  DOTNET_JitName COMPlus_JitName DOTNET_AltJitName COMPlus_AltJitName MONO_ENV_OPTIONS MONO_PATH
  LUA_INIT
  TCLLIBPATH
  R_PROFILE R_PROFILE_USER R_ENVIRON R_ENVIRON_USER
  GROFF_BIN_PATH`
	addedDroppedPrefixes  = `LUA_INIT_`
	addedOverrideOnlyKeys = `MAKEFLAGS GNUMAKEFLAGS
  PYTHONWARNINGS IPYTHONDIR JUPYTER_CONFIG_DIR UV_CONFIG_FILE
  IRBRC COMPOSER
  BASHOPTS CDPATH
  SUDO_ASKPASS SSH_ASKPASS_REQUIRE
  GIT_DIR GIT_COMMON_DIR GIT_ALLOW_PROTOCOL
  CFLAGS CXXFLAGS CPPFLAGS LDFLAGS
  CMAKE_PREFIX_PATH
  GOROOT GOMODCACHE GOWORK GOSUMDB GOINSECURE GOAUTH GOPACKAGESDRIVER
  CGO_CPPFLAGS CGO_CXXFLAGS CGO_FFLAGS
  CGO_CFLAGS_ALLOW CGO_CPPFLAGS_ALLOW CGO_CXXFLAGS_ALLOW CGO_FFLAGS_ALLOW CGO_LDFLAGS_ALLOW
  RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS
  RUSTDOCFLAGS CARGO_ENCODED_RUSTDOCFLAGS CARGO_BUILD_RUSTDOCFLAGS CARGO_HOME RUSTUP_HOME
  JAVA_HOME DOTNET_ROOT
  R_LIBS R_LIBS_USER R_LIBS_SITE TCL_LIBRARY TK_LIBRARY
  OPENSSL_MODULES OPENSSL_CONF_INCLUDE
  LESS LESSKEY LESSKEY_SYSTEM LESSKEYIN LESSKEYIN_SYSTEM LESSEDIT MANOPT MANROFFOPT
  VIMINIT GVIMINIT EXINIT VIM VIMRUNTIME NVIM_APPNAME
  XDG_CONFIG_DIRS XDG_DATA_HOME XDG_DATA_DIRS
  DOCKER_CONFIG KUBECONFIG
  HOSTALIASES RESOLV_HOST_CONF LOCPATH NLSPATH
  TAR_OPTIONS ZIPOPT ZIP UNZIP UNZIPOPT RSYNC_RSH RSYNC_CONNECT_PROG PYTHONINSPECT`
	addedOverrideOnlyPrefixes = `CORECLR_ DOTNET_ROOT_ LUA_PATH_ LUA_CPATH_`

	// addedPrefixExamples are real keys under the added prefixes.
	addedPrefixExamples = `LUA_INIT_5_2 LUA_INIT_5_3 LUA_INIT_5_4 CORECLR_ENABLE_PROFILING CORECLR_PROFILER
  CORECLR_PROFILER_PATH_64 CORECLR_PROFILER_PATH_ARM64 DOTNET_ROOT_X64 DOTNET_ROOT_ARM64
  LUA_PATH_5_4 LUA_CPATH_5_4`
)

// The full default lists: the contract, then the additions.
var (
	wantDroppedKeys          = fields(contractDroppedKeys, addedDroppedKeys)
	wantDroppedPrefixes      = fields(contractDroppedPrefixes, addedDroppedPrefixes)
	wantOverrideOnlyKeys     = fields(contractOverrideOnlyKeys, addedOverrideOnlyKeys)
	wantOverrideOnlyPrefixes = fields(contractOverrideOnlyPrefixes, addedOverrideOnlyPrefixes)
)

// fields splits and concatenates space-separated lists.
func fields(lists ...string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, strings.Fields(l)...)
	}
	return out
}

var portableKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func singleKeyViolation(key string) string {
	return "Security Violation: Environment variable '" + key + "' is forbidden during host execution."
}

// caseVariants returns the key as given, lower-cased, and in alternating case.
func caseVariants(key string) []string {
	var mixed strings.Builder
	for i, r := range key {
		if i%2 == 0 {
			mixed.WriteString(strings.ToLower(string(r)))
		} else {
			mixed.WriteString(strings.ToUpper(string(r)))
		}
	}
	return []string{key, strings.ToLower(key), mixed.String()}
}

func TestDefault(t *testing.T) {
	t.Run("the default lists are exactly the contract lists followed by the additions", func(t *testing.T) {
		p := Default()
		assert.Equal(t, wantDroppedKeys, p.DroppedKeys)
		assert.Equal(t, wantDroppedPrefixes, p.DroppedPrefixes)
		assert.Equal(t, wantOverrideOnlyKeys, p.OverrideOnlyKeys)
		assert.Equal(t, wantOverrideOnlyPrefixes, p.OverrideOnlyPrefixes)
	})

	t.Run("no entry is listed twice or shadowed by a dropped prefix", func(t *testing.T) {
		p := Default()
		seen := map[string]string{}
		for name, list := range map[string][]string{"dropped": p.DroppedKeys, "override-only": p.OverrideOnlyKeys} {
			for _, k := range list {
				u := upperASCII(k)
				if prev, dup := seen[u]; dup {
					t.Errorf("%s is in the %s list and in the %s list", k, prev, name)
				}
				seen[u] = name
			}
		}
		for _, k := range p.OverrideOnlyKeys {
			assert.False(t, matchesPrefix(k, p.DroppedPrefixes), "override-only %s is dropped by a prefix", k)
		}
		for _, list := range [][]string{p.DroppedPrefixes, p.OverrideOnlyPrefixes} {
			for _, pfx := range list {
				assert.True(t, strings.HasSuffix(pfx, "_"), "prefix %s ends with '_', so it matches whole name parts only", pfx)
			}
		}
	})

	t.Run("PATH is in no list because it is inherited normally", func(t *testing.T) {
		p := Default()
		for _, list := range [][]string{p.DroppedKeys, p.OverrideOnlyKeys} {
			assert.NotContains(t, list, "PATH")
		}
		assert.Equal(t, []string{"PATH=/bin"}, p.FilterInherited([]string{"PATH=/bin"}))
	})

	t.Run("each call returns an independent copy that callers may mutate", func(t *testing.T) {
		first := Default()
		first.DroppedKeys[0] = "MUTATED"
		first.DroppedPrefixes[0] = "MUTATED_"
		first.OverrideOnlyKeys[0] = "MUTATED"
		first.OverrideOnlyPrefixes[0] = "MUTATED_"
		first.DroppedKeys = append(first.DroppedKeys, "EXTRA")
		first.OverrideOnlyKeys = append(first.OverrideOnlyKeys, "EXTRA")

		second := Default()
		assert.Equal(t, wantDroppedKeys, second.DroppedKeys)
		assert.Equal(t, wantDroppedPrefixes, second.DroppedPrefixes)
		assert.Equal(t, wantOverrideOnlyKeys, second.OverrideOnlyKeys)
		assert.Equal(t, wantOverrideOnlyPrefixes, second.OverrideOnlyPrefixes)

		// Appending to a fresh copy must not write into shared backing arrays.
		a, b := Default(), Default()
		a.DroppedKeys = append(a.DroppedKeys, "ONLY_IN_A")
		b.DroppedKeys = append(b.DroppedKeys, "ONLY_IN_B")
		assert.Equal(t, "ONLY_IN_A", a.DroppedKeys[len(a.DroppedKeys)-1])
		assert.NotContains(t, Default().DroppedKeys, "ONLY_IN_A")
		assert.NotContains(t, Default().DroppedKeys, "ONLY_IN_B")
	})

	t.Run("the zero value still refuses PATH and non-portable keys but nothing else", func(t *testing.T) {
		var p Policy
		assert.Equal(t, pathViolation, p.ValidateOverrides(map[string]string{"PATH": "/x"}))
		assert.Equal(t, "Security Violation: invalid non-portable override keys: 1ABC.",
			p.ValidateOverrides(map[string]string{"1ABC": "x"}))
		assert.Empty(t, p.ValidateOverrides(map[string]string{"LD_PRELOAD": "x"}))
		assert.Equal(t, []string{"LD_PRELOAD=x"}, p.FilterInherited([]string{"LD_PRELOAD=x"}))
	})
}

func TestBlocklist(t *testing.T) {
	p := Default()

	type row struct {
		kind string // dropped key, dropped prefix, override-only key, override-only prefix
		key  string // the key exercised (a prefix gets a suffix)
	}
	var rows []row
	for _, k := range strings.Fields(contractDroppedKeys) {
		rows = append(rows, row{"dropped key", k})
	}
	for _, pfx := range strings.Fields(contractDroppedPrefixes) {
		rows = append(rows, row{"dropped prefix", pfx + "PRELOAD"}, row{"dropped prefix", pfx})
	}
	for _, k := range strings.Fields(contractOverrideOnlyKeys) {
		rows = append(rows, row{"override-only key", k})
	}
	for _, pfx := range strings.Fields(contractOverrideOnlyPrefixes) {
		rows = append(rows, row{"override-only prefix", pfx + "VALUE_0"}, row{"override-only prefix", pfx})
	}

	for _, r := range rows {
		dropped := strings.HasPrefix(r.kind, "dropped")
		for _, variant := range caseVariants(r.key) {
			environ := []string{"BEFORE=1", variant + "=some=value", "AFTER=2"}

			if dropped {
				t.Run(fmt.Sprintf("inherited %s %s is removed silently", r.kind, variant), func(t *testing.T) {
					assert.Equal(t, []string{"BEFORE=1", "AFTER=2"}, p.FilterInherited(environ))
					assert.Equal(t, []string{"BEFORE=1", "AFTER=2", marker}, p.Merge(environ, nil, marker))
				})
			} else {
				t.Run(fmt.Sprintf("inherited %s %s is kept", r.kind, variant), func(t *testing.T) {
					assert.Equal(t, environ, p.FilterInherited(environ))
				})
			}

			t.Run(fmt.Sprintf("%s %s is refused as an override with the single-key text", r.kind, variant), func(t *testing.T) {
				got := p.ValidateOverrides(map[string]string{variant: "x"})
				assert.Equal(t, singleKeyViolation(strings.ToUpper(r.key)), got)
			})

			t.Run(fmt.Sprintf("%s %s never reaches the merged environment as an override", r.kind, variant), func(t *testing.T) {
				got := p.Merge(nil, map[string]string{variant: "x", "OK": "1"})
				assert.Equal(t, []string{"OK=1"}, got)
			})
		}
	}
}

func TestAddedKeys(t *testing.T) {
	p := Default()

	type row struct {
		key     string
		dropped bool // else override-only
	}
	var rows []row
	for _, k := range strings.Fields(addedDroppedKeys) {
		rows = append(rows, row{k, true})
	}
	for _, k := range strings.Fields(addedOverrideOnlyKeys) {
		rows = append(rows, row{k, false})
	}
	for _, k := range strings.Fields(addedPrefixExamples) {
		rows = append(rows, row{k, hasAnyPrefix(k, strings.Fields(addedDroppedPrefixes))})
	}
	require.Len(t, rows, 56+83+11, "every added key has a row")

	for _, r := range rows {
		want := singleKeyViolation(upperASCII(r.key))
		for _, variant := range caseVariants(r.key) {
			environ := []string{"BEFORE=1", variant + "=/some/path=x", "AFTER=2"}
			if r.dropped {
				t.Run(fmt.Sprintf("inherited %s is dropped", variant), func(t *testing.T) {
					assert.Equal(t, []string{"BEFORE=1", "AFTER=2"}, p.FilterInherited(environ))
					assert.Equal(t, []string{"BEFORE=1", "AFTER=2", marker}, p.Merge(environ, nil, marker))
				})
			} else {
				t.Run(fmt.Sprintf("inherited %s is kept", variant), func(t *testing.T) {
					assert.Equal(t, environ, p.FilterInherited(environ))
					assert.Equal(t, append(slices.Clone(environ), marker), p.Merge(environ, nil, marker))
				})
			}
			t.Run(fmt.Sprintf("%s is refused as an override", variant), func(t *testing.T) {
				assert.Equal(t, want, p.ValidateOverrides(map[string]string{variant: "x"}))
				assert.Equal(t, []string{"OK=1"}, p.Merge(nil, map[string]string{variant: "x", "OK": "1"}))
			})
		}
	}

	t.Run("several added keys are refused together, upper-cased and sorted", func(t *testing.T) {
		got := p.ValidateOverrides(map[string]string{
			"perllib": "/x", "MAKEFILES": "/x.mk", "Node_Repl_External_Module": "/x.js",
			"PYTHONEXECUTABLE": "/x", "makeflags": "-j4", "dotnet_gcname": "x.so",
		})
		assert.Equal(t, "Security Violation: blocked override keys: DOTNET_GCNAME, MAKEFILES, MAKEFLAGS, "+
			"NODE_REPL_EXTERNAL_MODULE, PERLLIB, PYTHONEXECUTABLE.", got)
	})

	t.Run("names that only resemble an added entry are not matched", func(t *testing.T) {
		in := []string{"LUA_INITIAL=1", "MY_PERLLIB=1", "PERLLIBS=1", "MAKEFILE=1", "CPPCHECK=1",
			"FPATH_X=1", "CORECLR=1", "DOTNET_ROOTS=1", "LESSCHARSET=utf-8", "VIMDIFF=1"}
		assert.Equal(t, in, p.FilterInherited(in))
		for _, entry := range in {
			key, _, _ := strings.Cut(entry, "=")
			assert.Empty(t, p.ValidateOverrides(map[string]string{key: "x"}), key)
		}
	})
}

func TestOrdinaryKeys(t *testing.T) {
	p := Default()

	// Keys everyday runs set, and the ones the root package's tests inherit.
	ordinary := strings.Fields(`LANG LANGUAGE LC_ALL LC_CTYPE TERM COLORTERM TZ USER LOGNAME PWD TMPDIR
  CI NO_COLOR FORCE_COLOR DISPLAY SSH_AUTH_SOCK GOCACHE GOTMPDIR GOOS GOARCH GOMAXPROCS GODEBUG
  GOTOOLCHAIN GOBIN GOCOVERDIR GORACE CGO_ENABLED NODE_ENV PYTHONUNBUFFERED PYTHONDONTWRITEBYTECODE
  PYTHONSAFEPATH PYTHONIOENCODING RUST_BACKTRACE RUST_LOG CARGO_TARGET_DIR CARGO_TERM_COLOR
  DOTNET_CLI_TELEMETRY_OPTOUT DOTNET_NOLOGO COMPlus_gcServer MAKELEVEL LESSCHARSET MANWIDTH
  BGEXEC_INHERITED BGEXEC_TEST_HELPER BGEXEC_RELIABILITY_TAG OPENCLAW_SHELL`)

	for _, key := range ordinary {
		t.Run(key+" is inherited and accepted as an override", func(t *testing.T) {
			environ := []string{key + "=v"}
			assert.Equal(t, environ, p.FilterInherited(environ))
			assert.Empty(t, p.ValidateOverrides(map[string]string{key: "w"}))
			assert.Equal(t, []string{key + "=w"}, p.Merge(environ, map[string]string{key: "w"}))
		})
	}

	t.Run("HOME, PATH and SHELL handling is unchanged", func(t *testing.T) {
		environ := []string{"HOME=/home/me", "PATH=/bin", "SHELL=/bin/zsh", "TERM=xterm"}
		assert.Equal(t, []string{"HOME=/home/me", "PATH=/bin", "TERM=xterm"}, p.FilterInherited(environ))
		assert.Equal(t, singleKeyViolation("HOME"), p.ValidateOverrides(map[string]string{"HOME": "/x"}))
		assert.Equal(t, pathViolation, p.ValidateOverrides(map[string]string{"PATH": "/x"}))
		assert.Equal(t, singleKeyViolation("SHELL"), p.ValidateOverrides(map[string]string{"SHELL": "/x"}))
	})
}

func TestFilterInherited(t *testing.T) {
	p := Default()

	t.Run("order is preserved and values containing '=' survive", func(t *testing.T) {
		in := []string{"Z=1", "A=x=y", "M=", "LD_PRELOAD=/evil.so", "B=2"}
		assert.Equal(t, []string{"Z=1", "A=x=y", "M=", "B=2"}, p.FilterInherited(in))
	})

	t.Run("entries without '=' are dropped", func(t *testing.T) {
		assert.Equal(t, []string{"A=1"}, p.FilterInherited([]string{"NOEQUALS", "A=1", ""}))
	})

	t.Run("keys that only contain a dropped name are kept", func(t *testing.T) {
		in := []string{"MY_NODE_OPTIONS=1", "SHELLX=1", "XLD_PRELOAD=1", "ENVIRONMENT=1", "CCACHE=1", "BASH_FUNCTION=1"}
		assert.Equal(t, in, p.FilterInherited(in))
	})

	t.Run("case folding is ASCII-only", func(t *testing.T) {
		// U+017F (long s) upper-cases to S in Unicode, but is not SHELL.
		in := []string{"\u017fHELL=1"}
		assert.Equal(t, in, p.FilterInherited(in))
	})

	t.Run("the input slice is not modified and the result is never nil", func(t *testing.T) {
		in := []string{"A=1", "SHELL=/bin/zsh", "B=2"}
		_ = p.FilterInherited(in)
		assert.Equal(t, []string{"A=1", "SHELL=/bin/zsh", "B=2"}, in)
		assert.NotNil(t, p.FilterInherited(nil))
		assert.Empty(t, p.FilterInherited(nil))
	})

	t.Run("extended lists are honoured case-insensitively", func(t *testing.T) {
		q := Default()
		q.DroppedKeys = append(q.DroppedKeys, "my_secret")
		q.DroppedPrefixes = append(q.DroppedPrefixes, "corp_", "")
		in := []string{"MY_SECRET=1", "CORP_TOKEN=2", "KEEP=3"}
		assert.Equal(t, []string{"KEEP=3"}, q.FilterInherited(in))
		assert.Equal(t, in, p.FilterInherited(in), "the default policy is unaffected")
	})
}

func TestValidateOverrides(t *testing.T) {
	p := Default()

	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"a nil map is accepted", nil, ""},
		{"an empty map is accepted", map[string]string{}, ""},
		{"harmless keys are accepted", map[string]string{
			"FOO": "1", "foo": "2", "_X": "", "a1": "x", "LANG": "C.UTF-8", "TERM": "xterm",
			"NODE_ENV": "production", "GIT_AUTHOR_NAME": "me", "LC_ALL": "C", "MY_HOME": "/h",
			"HOMEDIR": "/h", "PATHEXT": ".EXE", "XPATH": "/", "OPENCLAW_SHELL": "x", "VALUE": "a=b;c\n",
		}, ""},
		{"PATH alone gets the PATH text", map[string]string{"PATH": "/x"}, pathViolation},
		{"lower-case path gets the PATH text", map[string]string{"path": "/x"}, pathViolation},
		{"PATH in two spellings is de-duplicated to the PATH text", map[string]string{"PATH": "/x", "Path": "/y"}, pathViolation},
		{"one other key gets the single-key text upper-cased", map[string]string{"home": "/tmp"}, singleKeyViolation("HOME")},
		{"one key in two spellings is de-duplicated to the single-key text", map[string]string{"HOME": "/a", "home": "/b", "Home": "/c"}, singleKeyViolation("HOME")},
		{"several blocked keys are upper-cased and sorted", map[string]string{"pager": "x", "EDITOR": "x", "LD_preload": "x"},
			"Security Violation: blocked override keys: EDITOR, LD_PRELOAD, PAGER."},
		{"several blocked keys are de-duplicated", map[string]string{"HOME": "x", "home": "x", "PAGER": "x", "pager": "x"},
			"Security Violation: blocked override keys: HOME, PAGER."},
		{"PATH with another key names PATH and lists the keys in parentheses", map[string]string{"PATH": "x", "HOME": "x"},
			"Security Violation: Custom 'PATH' variable is forbidden during host execution (blocked override keys: HOME, PATH)."},
		{"PATH with an invalid key names PATH and lists both halves in parentheses", map[string]string{"PATH": "x", "1ABC": "x"},
			"Security Violation: Custom 'PATH' variable is forbidden during host execution (blocked override keys: PATH; invalid non-portable override keys: 1ABC)."},
		{"lower-case path among several keys is upper-cased in the list", map[string]string{"path": "x", "pager": "x", "x-y": "x"},
			"Security Violation: Custom 'PATH' variable is forbidden during host execution (blocked override keys: PAGER, PATH; invalid non-portable override keys: x-y)."},
		{"blocked keys are sorted case-insensitively, so _ comes before letters", map[string]string{"HOME": "x", "_JAVA_OPTIONS": "x", "ZDOTDIR": "x"},
			"Security Violation: blocked override keys: _JAVA_OPTIONS, HOME, ZDOTDIR."},
		{"invalid keys are sorted case-insensitively and shown as typed", map[string]string{"b-2": "x", "A-3": "x", "a-1": "x", "B=0": "x"},
			"Security Violation: invalid non-portable override keys: a-1, A-3, b-2, B=0."},
		{"invalid keys differing only in case keep both spellings, upper case first", map[string]string{"x-Y": "x", "X-y": "x"},
			"Security Violation: invalid non-portable override keys: X-y, x-Y."},
		{"a single invalid key uses the several format with only the invalid half", map[string]string{"1ABC": "x"},
			"Security Violation: invalid non-portable override keys: 1ABC."},
		{"several invalid keys are sorted and keep their case", map[string]string{"x-y": "1", "A=B": "1", "1abc": "1"},
			"Security Violation: invalid non-portable override keys: 1abc, A=B, x-y."},
		{"both halves are joined by a semicolon", map[string]string{"HOME": "x", "ld_preload": "x", "x-y": "x", "FOO": "ok"},
			"Security Violation: blocked override keys: HOME, LD_PRELOAD; invalid non-portable override keys: x-y."},
		{"one blocked and one invalid key use the several format", map[string]string{"HOME": "x", "é": "x"},
			"Security Violation: blocked override keys: HOME; invalid non-portable override keys: é."},
		{"a key containing '=' is invalid", map[string]string{"A=B": "x"},
			"Security Violation: invalid non-portable override keys: A=B."},
		{"a key containing NUL is invalid and shown quoted", map[string]string{"A\x00B": "x"},
			`Security Violation: invalid non-portable override keys: "A\x00B".`},
		{"a key starting with a digit is invalid", map[string]string{"1ABC": "x"},
			"Security Violation: invalid non-portable override keys: 1ABC."},
		{"the empty key is invalid and shown quoted", map[string]string{"": "x"},
			`Security Violation: invalid non-portable override keys: "".`},
		{"a non-ASCII key is invalid", map[string]string{"é": "x"},
			"Security Violation: invalid non-portable override keys: é."},
		{"keys with spaces or list punctuation are shown quoted", map[string]string{" FOO": "x", "a,b": "x", "c;d": "x"},
			`Security Violation: invalid non-portable override keys: " FOO", "a,b", "c;d".`},
		{"a key with invalid UTF-8 is shown quoted", map[string]string{"\xff": "x"},
			`Security Violation: invalid non-portable override keys: "\xff".`},
		{"a NUL byte in a value is refused", map[string]string{"FOO": "a\x00b"},
			"Environment variable 'FOO' has a NUL byte in its value."},
		{"the first key in sorted order is named for NUL values", map[string]string{"ZED": "\x00", "ALPHA": "\x00", "OK": "fine"},
			"Environment variable 'ALPHA' has a NUL byte in its value."},
		{"key violations take precedence over NUL values", map[string]string{"HOME": "x", "FOO": "\x00"},
			singleKeyViolation("HOME")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, p.ValidateOverrides(tc.env))
		})
	}

	t.Run("extended lists are honoured case-insensitively", func(t *testing.T) {
		q := Default()
		q.OverrideOnlyKeys = append(q.OverrideOnlyKeys, "My_Secret")
		q.OverrideOnlyPrefixes = append(q.OverrideOnlyPrefixes, "corp_")
		assert.Equal(t, singleKeyViolation("MY_SECRET"), q.ValidateOverrides(map[string]string{"my_secret": "x"}))
		assert.Equal(t, singleKeyViolation("CORP_TOKEN"), q.ValidateOverrides(map[string]string{"Corp_Token": "x"}))
		assert.Empty(t, p.ValidateOverrides(map[string]string{"MY_SECRET": "x"}), "the default policy is unaffected")
	})

	t.Run("PATH among several keys names PATH, with the blocked keys in parentheses", func(t *testing.T) {
		q := Default()
		q.OverrideOnlyKeys = append(q.OverrideOnlyKeys, "A")
		assert.Equal(t, "Security Violation: Custom 'PATH' variable is forbidden during host execution (blocked override keys: A, PATH).",
			q.ValidateOverrides(map[string]string{"a": "x", "PATH": "x"}))
	})

	t.Run("the input map is not modified", func(t *testing.T) {
		env := map[string]string{"HOME": "x", "1": "y", "OK": "z"}
		_ = p.ValidateOverrides(env)
		assert.Equal(t, map[string]string{"HOME": "x", "1": "y", "OK": "z"}, env)
	})
}

func TestMerge(t *testing.T) {
	p := Default()

	t.Run("an override replaces an inherited key in place and new keys follow sorted", func(t *testing.T) {
		environ := []string{"A=1", "FOO=old", "SHELL=/bin/zsh", "B=2"}
		got := p.Merge(environ, map[string]string{"FOO": "new", "ZED": "z", "BAR": "b", "MID": "m"})
		assert.Equal(t, []string{"A=1", "FOO=new", "B=2", "BAR=b", "MID=m", "ZED=z"}, got)
	})

	t.Run("override replacement matches the key exactly including case", func(t *testing.T) {
		got := p.Merge([]string{"foo=1"}, map[string]string{"FOO": "2"})
		assert.Equal(t, []string{"foo=1", "FOO=2"}, got)
	})

	t.Run("an override collapses duplicate inherited entries of its key", func(t *testing.T) {
		got := p.Merge([]string{"FOO=1", "A=a", "FOO=2"}, map[string]string{"FOO": "3"})
		assert.Equal(t, []string{"FOO=3", "A=a"}, got)
	})

	t.Run("override-only keys stay when inherited", func(t *testing.T) {
		got := p.Merge([]string{"HOME=/home/me", "HTTP_PROXY=http://p"}, map[string]string{"X": "1"})
		assert.Equal(t, []string{"HOME=/home/me", "HTTP_PROXY=http://p", "X=1"}, got)
	})

	t.Run("the marker is appended last and wins over inherited and override values", func(t *testing.T) {
		environ := []string{"OPENCLAW_SHELL=bash", "A=1", "OPENCLAW_SHELL=zsh"}
		got := p.Merge(environ, map[string]string{"OPENCLAW_SHELL": "mine", "B": "2"}, marker)
		assert.Equal(t, []string{"A=1", "B=2", marker}, got)
	})

	t.Run("later extra entries win over earlier ones and malformed extras are ignored", func(t *testing.T) {
		got := p.Merge([]string{"A=1"}, nil, "X=1", "NOEQUALS", "X=2", marker)
		assert.Equal(t, []string{"A=1", "X=2", marker}, got)
	})

	t.Run("unvalidated refused overrides are skipped as a defence", func(t *testing.T) {
		overrides := map[string]string{
			"LD_PRELOAD": "/evil.so", "PATH": "/evil", "home": "/tmp", "A=B": "x", "": "y",
			"GIT_CONFIG_COUNT": "1", "NUL": "a\x00b", "GOOD": "yes",
		}
		got := p.Merge([]string{"PATH=/bin"}, overrides, marker)
		assert.Equal(t, []string{"PATH=/bin", "GOOD=yes", marker}, got)
	})

	t.Run("the output is deterministic across calls", func(t *testing.T) {
		overrides := map[string]string{}
		for i := range 50 {
			overrides[fmt.Sprintf("K%02d", i)] = "v"
		}
		first := p.Merge([]string{"A=1"}, overrides, marker)
		for range 20 {
			assert.Equal(t, first, p.Merge([]string{"A=1"}, overrides, marker))
		}
		assert.True(t, slices.IsSorted(first[1:len(first)-1]))
	})

	t.Run("the inputs are not modified and the result is never nil", func(t *testing.T) {
		environ := []string{"A=1", "LD_PRELOAD=x", "OPENCLAW_SHELL=old"}
		overrides := map[string]string{"A": "2", "HOME": "/x"}
		_ = p.Merge(environ, overrides, marker)
		assert.Equal(t, []string{"A=1", "LD_PRELOAD=x", "OPENCLAW_SHELL=old"}, environ)
		assert.Equal(t, map[string]string{"A": "2", "HOME": "/x"}, overrides)
		assert.NotNil(t, p.Merge(nil, nil))
		assert.Equal(t, []string{marker}, p.Merge(nil, nil, marker))
	})
}

func TestConcurrentUse(t *testing.T) {
	t.Run("methods may run concurrently on a shared unmutated policy", func(t *testing.T) {
		p := Default()
		environ := []string{"A=1", "LD_PRELOAD=x", "HOME=/h"}
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				for range 100 {
					_ = p.FilterInherited(environ)
					_ = p.ValidateOverrides(map[string]string{"HOME": "x", fmt.Sprint(i): "y"})
					_ = p.Merge(environ, map[string]string{"B": "2"}, marker)
				}
			})
		}
		wg.Wait()
		require.Equal(t, []string{"A=1", "HOME=/h"}, p.FilterInherited(environ))
	})
}

// upperASCII is the test's own ASCII upper-casing, independent of the package.
func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// Upper-cased sets built from the test's copies of the lists alone, for the
// fuzz oracle.
var (
	droppedSet      = toSet(wantDroppedKeys)
	overrideOnlySet = toSet(wantOverrideOnlyKeys)
)

func toSet(keys []string) map[string]bool {
	set := map[string]bool{}
	for _, k := range keys {
		set[upperASCII(k)] = true
	}
	return set
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, pfx := range prefixes {
		if strings.HasPrefix(s, upperASCII(pfx)) {
			return true
		}
	}
	return false
}

// listedAs reports, from the test's copies of the lists alone, whether a key
// is dropped and whether it is refused as an override.
func listedAs(key string) (dropped, refused bool) {
	u := upperASCII(key)
	dropped = droppedSet[u] || hasAnyPrefix(u, wantDroppedPrefixes)
	refused = dropped || u == "PATH" || overrideOnlySet[u] || hasAnyPrefix(u, wantOverrideOnlyPrefixes)
	return dropped, refused
}

var nulValueResult = regexp.MustCompile(`(?s)^Environment variable '[A-Za-z_][A-Za-z0-9_]*' has a NUL byte in its value\.$`)

func FuzzValidateOverrides(f *testing.F) {
	f.Add("HOME", "/tmp", "FOO", "bar", "A=1\nLD_PRELOAD=x\nOPENCLAW_SHELL=zsh")
	f.Add("PATH", "/x", "path", "/y", "PATH=/bin")
	f.Add("ld_preload", "x", "1ABC", "y", "")
	f.Add("A=B", "x", "A\x00B", "y", "SHELL=/bin/sh\nshell=/bin/sh")
	f.Add("", "", "é", "\x00", "=weird\nNOEQ")
	f.Add("GIT_CONFIG_KEY_0", "x", "FOO", "a\x00b", "GIT_CONFIG_COUNT=1")
	f.Add("OPENCLAW_SHELL", "mine", "Bash_Func_x%%", "()", "bash_func_f%%=() { :; }")
	f.Add("PerlLib", "/x", "MAKEFLAGS", "-j4", "MAKEFILES=/x.mk\nlua_init_5_4=@/x.lua\nGOCACHE=/c\nLANG=C")

	p := Default()
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, inherited string) {
		env := map[string]string{k1: v1, k2: v2}
		got := p.ValidateOverrides(env)

		if got != "" && !strings.HasPrefix(got, "Security Violation:") && !nulValueResult.MatchString(got) {
			t.Fatalf("unexpected result shape %q", got)
		}
		if got == "" {
			for k, v := range env {
				if !portableKey.MatchString(k) {
					t.Fatalf("accepted non-portable key %q", k)
				}
				if _, refused := listedAs(k); refused {
					t.Fatalf("accepted blocked key %q", k)
				}
				if strings.Contains(v, "\x00") {
					t.Fatalf("accepted NUL value for %q", k)
				}
			}
		} else if !strings.HasPrefix(got, "Security Violation:") {
			for k := range env {
				if !portableKey.MatchString(k) {
					t.Fatalf("NUL-value text although key %q is invalid", k)
				}
				if _, refused := listedAs(k); refused {
					t.Fatalf("NUL-value text although key %q is blocked", k)
				}
			}
		} else {
			bad := false
			for k := range env {
				_, refused := listedAs(k)
				bad = bad || refused || !portableKey.MatchString(k)
			}
			if !bad {
				t.Fatalf("violation %q reported for acceptable keys %q", got, env)
			}
		}

		environ := append(strings.Split(inherited, "\n"), "LD_PRELOAD=/evil.so", "node_options=--x", k1+"="+v1)
		merged := p.Merge(environ, env, marker)
		if len(merged) == 0 || merged[len(merged)-1] != marker {
			t.Fatalf("marker is not last: %q", merged)
		}
		for i, entry := range merged {
			key, _, ok := strings.Cut(entry, "=")
			if !ok {
				t.Fatalf("entry without '=': %q", entry)
			}
			if dropped, _ := listedAs(key); dropped {
				t.Fatalf("dropped key %q in merged output %q", key, merged)
			}
			if key == "OPENCLAW_SHELL" && i != len(merged)-1 {
				t.Fatalf("marker key appears before the marker: %q", merged)
			}
		}
		if got == "" {
			for k, v := range env {
				if k == "OPENCLAW_SHELL" {
					continue
				}
				if !slices.Contains(merged, k+"="+v) {
					t.Fatalf("accepted override %q=%q missing from %q", k, v, merged)
				}
			}
		}
	})
}
