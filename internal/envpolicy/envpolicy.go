// Package envpolicy implements the environment security rules for host runs.
//
// Three operations make up the rules:
//
//   - [Policy.FilterInherited] silently removes dangerous keys from the
//     environment a child would inherit: keys that make a program load or
//     run code, a library, a startup file or a hook named by their value
//     (for example NODE_OPTIONS, BASH_ENV, PERLLIB, MAKEFILES, LUA_INIT and
//     any LD_* key).
//   - [Policy.ValidateOverrides] checks the per-call env keys before anything
//     runs. It refuses PATH, the dropped keys and prefixes, and the
//     override-only keys and prefixes (keys such as HOME, EDITOR, MAKEFLAGS
//     or GIT_CONFIG_*, which steer what runs but are commonly set on purpose,
//     so they are kept when inherited), plus keys that are not portable
//     (^[A-Za-z_][A-Za-z0-9_]*$). A refusal is returned as the exact failure
//     text the exec tool reports.
//   - [Policy.Merge] builds the final child environment: the filtered
//     inherited environment, then the accepted overrides, then extra entries
//     such as the OPENCLAW_SHELL=exec marker, which always win.
//
// The key lists are data kept in one place, lists.go, with the reason for
// each entry. [Default] returns a fresh copy that the embedding runtime may
// extend. Key matching against the lists is ASCII case-insensitive: every
// list entry and every portable key is ASCII, so "ld_preload" matches
// LD_PRELOAD while a key such as "ſHELL" (with U+017F) is never taken for
// SHELL.
package envpolicy

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pathKey is always refused as an override, whatever the lists say. It is
// not part of any list because it is inherited normally.
const pathKey = "PATH"

// Failure texts of the exec tool.
const (
	violationPrefix = "Security Violation: "
	pathText        = "Security Violation: Custom 'PATH' variable is forbidden during host execution."
	blockedHalf     = "blocked override keys: "
	invalidHalf     = "invalid non-portable override keys: "
)

// Policy holds the key lists used by the environment security rules. The
// zero value is NOT useful (it only refuses PATH and non-portable keys); use
// [Default] and extend the lists as needed.
//
// Matching against every list is ASCII case-insensitive; empty list entries
// are ignored. PATH is refused as an override regardless of the lists.
//
// Policy methods only read the lists, so they are safe for concurrent use as
// long as the Policy (including the backing arrays of its slices) is not
// mutated at the same time.
type Policy struct {
	// DroppedKeys are removed silently from the inherited environment and refused as overrides.
	DroppedKeys []string
	// DroppedPrefixes likewise (DYLD_, LD_, BASH_FUNC_, LUA_INIT_).
	DroppedPrefixes []string
	// OverrideOnlyKeys are refused as per-call overrides but kept when inherited.
	OverrideOnlyKeys []string
	// OverrideOnlyPrefixes likewise (GIT_CONFIG_, NPM_CONFIG_, CORECLR_, ...).
	OverrideOnlyPrefixes []string
}

// Default returns a fresh copy of the default lists (see lists.go); callers
// may append to or modify it without affecting later calls.
func Default() Policy {
	return Policy{
		DroppedKeys:          slices.Clone(defaultDroppedKeys),
		DroppedPrefixes:      slices.Clone(defaultDroppedPrefixes),
		OverrideOnlyKeys:     slices.Clone(defaultOverrideOnlyKeys),
		OverrideOnlyPrefixes: slices.Clone(defaultOverrideOnlyPrefixes),
	}
}

// FilterInherited returns environ ("K=V" entries) minus the entries whose key
// (the text before the first '=') is a dropped key or starts with a dropped
// prefix, matched ASCII case-insensitively. Order is preserved; entries
// without '=' are dropped. Override-only keys are kept. The result is a new
// slice (never nil); environ is not modified.
func (p Policy) FilterInherited(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, entry := range environ {
		key, _, ok := strings.Cut(entry, "=")
		if !ok || p.isDropped(key) {
			continue
		}
		out = append(out, entry)
	}
	return out
}

// ValidateOverrides checks per-call env keys (and values). It returns "" when
// all are acceptable, else the failure text:
//
//   - Keys that do not match ^[A-Za-z_][A-Za-z0-9_]*$ (including the empty
//     key and keys containing '=' or NUL) are invalid. Valid keys equal to
//     PATH, to a dropped or override-only key, or starting with a dropped or
//     override-only prefix (ASCII case-insensitive) are blocked.
//   - Blocked keys are upper-cased and de-duplicated; invalid keys are
//     shown as typed. Each half is sorted case-insensitively (ties in byte
//     order), so _JAVA_OPTIONS comes before HOME.
//   - Only PATH blocked and nothing invalid:
//     "Security Violation: Custom 'PATH' variable is forbidden during host execution."
//   - Exactly one other blocked key and nothing invalid:
//     "Security Violation: Environment variable '<KEY>' is forbidden during host execution."
//   - PATH among other keys (blocked or invalid):
//     "Security Violation: Custom 'PATH' variable is forbidden during host execution (blocked override keys: A, PATH; invalid non-portable override keys: x)."
//   - Otherwise (several blocked keys, or any invalid key, even a single one):
//     "Security Violation: blocked override keys: A, B; invalid non-portable override keys: x."
//   - In both lists an empty half is omitted with its "; ". An invalid key
//     that is empty, not valid UTF-8, or holds a space, control or
//     non-graphic character, '"', ',' or ';' could not be read back from
//     the list as typed, so it is shown Go-quoted (e.g. "" or "A\x00B");
//     others are shown verbatim (e.g. A=B, 1abc, é).
//   - When every key is acceptable but a value contains a NUL byte (which no
//     process environment can carry), the result is
//     "Environment variable '<KEY>' has a NUL byte in its value." for the
//     first such key in sorted order.
//
// A nil or empty map is acceptable.
func (p Policy) ValidateOverrides(env map[string]string) string {
	var blocked, invalid []string
	for key := range env {
		switch {
		case !isPortableKey(key):
			invalid = append(invalid, key)
		case p.isOverrideBlocked(key):
			blocked = append(blocked, asciiUpper(key))
		}
	}
	slices.SortFunc(blocked, compareFold)
	blocked = slices.Compact(blocked)
	slices.SortFunc(invalid, compareFold) // map keys: no duplicates
	for i, key := range invalid {
		invalid[i] = displayInvalidKey(key)
	}

	switch {
	case len(blocked) == 0 && len(invalid) == 0:
		return nulValueText(env)
	case len(invalid) == 0 && len(blocked) == 1 && blocked[0] == pathKey:
		return pathText
	case len(invalid) == 0 && len(blocked) == 1:
		return "Security Violation: Environment variable '" + blocked[0] + "' is forbidden during host execution."
	}
	var halves []string
	if len(blocked) > 0 {
		halves = append(halves, blockedHalf+strings.Join(blocked, ", "))
	}
	if len(invalid) > 0 {
		halves = append(halves, invalidHalf+strings.Join(invalid, ", "))
	}
	keys := strings.Join(halves, "; ")
	if slices.Contains(blocked, pathKey) {
		return strings.TrimSuffix(pathText, ".") + " (" + keys + ")."
	}
	return violationPrefix + keys + "."
}

// compareFold orders keys case-insensitively, then by bytes, so the order
// is total and equal keys are adjacent.
func compareFold(a, b string) int {
	if c := strings.Compare(strings.ToLower(a), strings.ToLower(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// nulValueText reports the first key (sorted) whose value holds a NUL byte.
func nulValueText(env map[string]string) string {
	var bad []string
	for key, value := range env {
		if strings.IndexByte(value, 0) >= 0 {
			bad = append(bad, key)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "Environment variable '" + slices.Min(bad) + "' has a NUL byte in its value."
}

// Merge returns FilterInherited(environ) with the overrides applied, then the
// extra entries. Output order is deterministic:
//
//   - inherited entries in their order; an override replaces the inherited
//     entry with the same key (exact-case match) in place, and later
//     duplicates of that key are removed;
//   - then the overrides that replaced nothing, sorted by key;
//   - then extra ("K=V") entries in order. An extra entry wins: earlier
//     entries with the same key (exact case) are removed. Extra entries are
//     trusted and not checked against the lists; ones without '=' are ignored.
//
// Overrides should have been validated with [Policy.ValidateOverrides] first.
// As a defence, Merge silently skips any override that validation would
// refuse (non-portable or blocked key, or NUL byte in the value), so the
// result never carries a dropped key from the overrides. environ and
// overrides are not modified; the result is a new, never nil, slice.
func (p Policy) Merge(environ []string, overrides map[string]string, extra ...string) []string {
	inherited := p.FilterInherited(environ)

	accepted := make(map[string]string, len(overrides))
	for key, value := range overrides {
		if isPortableKey(key) && !p.isOverrideBlocked(key) && strings.IndexByte(value, 0) < 0 {
			accepted[key] = value
		}
	}

	out := make([]string, 0, len(inherited)+len(accepted)+len(extra))
	applied := make(map[string]bool, len(accepted))
	for _, entry := range inherited {
		key, _, _ := strings.Cut(entry, "=")
		value, ok := accepted[key]
		if !ok {
			out = append(out, entry)
			continue
		}
		if !applied[key] {
			applied[key] = true
			out = append(out, key+"="+value)
		}
	}
	fresh := make([]string, 0, len(accepted))
	for key := range accepted {
		if !applied[key] {
			fresh = append(fresh, key)
		}
	}
	slices.Sort(fresh)
	for _, key := range fresh {
		out = append(out, key+"="+accepted[key])
	}

	for _, entry := range extra {
		key, _, ok := strings.Cut(entry, "=")
		if !ok {
			continue
		}
		out = slices.DeleteFunc(out, func(e string) bool {
			k, _, _ := strings.Cut(e, "=")
			return k == key
		})
		out = append(out, entry)
	}
	return out
}

// isDropped reports whether key is a dropped key or has a dropped prefix.
func (p Policy) isDropped(key string) bool {
	return matchesKey(key, p.DroppedKeys) || matchesPrefix(key, p.DroppedPrefixes)
}

// isOverrideBlocked reports whether key may not be set as a per-call override.
func (p Policy) isOverrideBlocked(key string) bool {
	return asciiEqualFold(key, pathKey) ||
		p.isDropped(key) ||
		matchesKey(key, p.OverrideOnlyKeys) ||
		matchesPrefix(key, p.OverrideOnlyPrefixes)
}

// matchesKey reports whether key equals (ASCII case-insensitive) a non-empty
// entry of list.
func matchesKey(key string, list []string) bool {
	for _, k := range list {
		if k != "" && asciiEqualFold(key, k) {
			return true
		}
	}
	return false
}

// matchesPrefix reports whether key starts with (ASCII case-insensitive) a
// non-empty entry of prefixes.
func matchesPrefix(key string, prefixes []string) bool {
	for _, prefix := range prefixes {
		if prefix != "" && len(key) >= len(prefix) && asciiEqualFold(key[:len(prefix)], prefix) {
			return true
		}
	}
	return false
}

// isPortableKey reports whether key matches ^[A-Za-z_][A-Za-z0-9_]*$.
func isPortableKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// displayInvalidKey renders a non-portable key for the failure text: verbatim
// when it is readable and cannot be confused with the list punctuation,
// Go-quoted otherwise.
func displayInvalidKey(key string) string {
	if key == "" || !utf8.ValidString(key) {
		return strconv.Quote(key)
	}
	for _, r := range key {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '"' || r == ',' || r == ';' {
			return strconv.Quote(key)
		}
	}
	return key
}

// asciiUpper upper-cases the ASCII letters of s.
func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - ('a' - 'A')
		}
		return r
	}, s)
}

// asciiEqualFold reports whether a and b are equal under ASCII case folding.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}
