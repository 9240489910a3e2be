package bgexec

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeriveName(t *testing.T) {
	cases := map[string]string{
		"echo hello":                     "echo hello",
		"npm run build":                  "npm run",
		"ls -la":                         "ls -la",
		"python3 -u x.py":                "python3 x.py",
		"make":                           "make",
		"  ":                             "",
		`git commit -m "a message here"`: "git commit",
		`grep -r "two words" .`:          "grep two words",
		"cat " + strings.Repeat("a", 30) + strings.Repeat("b", 30): "cat " + strings.Repeat("a", 22) + "..." + strings.Repeat("b", 22),
		"tail -f -n 5": "tail 5",
		"x -a -b":      "x -a",
	}
	for cmd, want := range cases {
		t.Run("the name of "+cmd, func(t *testing.T) {
			assert.Equal(t, want, deriveName(cmd))
		})
	}
	assert.Len(t, []rune(strings.TrimPrefix(deriveName("cat "+strings.Repeat("é", 100)), "cat ")), maxNameTarget-1, "22 + 3 + 22 characters")
}

func TestCompactDuration(t *testing.T) {
	cases := map[time.Duration]string{
		850 * time.Millisecond:                "850ms",
		45 * time.Second:                      "45s",
		2*time.Minute + 5*time.Second:         "2m5s",
		2 * time.Minute:                       "2m",
		90 * time.Minute:                      "1h30m",
		51 * time.Hour:                        "2d3h",
		-time.Second:                          "0ms",
		59*time.Second + 999*time.Millisecond: "59s",
	}
	for d, want := range cases {
		assert.Equal(t, want, compactDuration(d), d.String())
	}
}

func TestPageLines(t *testing.T) {
	lines := make([]string, 250)
	for i := range lines {
		lines[i] = itoa(i)
	}
	cases := []struct {
		name          string
		offset, limit *int
		first, last   string
		n             int
		hint          bool
	}{
		{"both omitted gives the last 200 and a hint", nil, nil, "50", "249", 200, true},
		{"only limit gives the last limit lines", nil, ptr(3), "247", "249", 3, false},
		{"only offset runs to the end", ptr(10), nil, "10", "249", 240, false},
		{"both give a window", ptr(5), ptr(2), "5", "6", 2, false},
		{"a window past the end is clipped", ptr(248), ptr(10), "248", "249", 2, false},
		{"an offset past the end is empty", ptr(1000), nil, "", "", 0, false},
		{"a huge limit returns everything", nil, ptr(1 << 50), "0", "249", 250, false},
		{"a negative offset is 0", ptr(-3), ptr(2), "0", "1", 2, false},
		{"a negative offset without limit runs to the end", ptr(-1), nil, "0", "249", 250, false},
		{"a zero limit is empty", nil, ptr(0), "", "", 0, false},
		{"a negative limit is empty", ptr(5), ptr(-1), "", "", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page, hint := pageLines(lines, c.offset, c.limit)
			require.Len(t, page, c.n)
			if c.n > 0 {
				assert.Equal(t, c.first, page[0])
				assert.Equal(t, c.last, page[len(page)-1])
			}
			assert.Equal(t, c.hint, hint != "")
		})
	}
	short, hint := pageLines(lines[:5], nil, nil)
	assert.Len(t, short, 5)
	assert.Empty(t, hint, "no hint when everything is shown")
	assert.Equal(t, []string{"a", "b", ""}, splitLines("a\r\nb\n\n"))
	assert.Nil(t, splitLines(""))
}

func TestConfigClamps(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		name string
		vars map[string]string
		want Config
	}{
		{"unset variables keep the defaults", nil, Config{}},
		{"values in range are taken", map[string]string{EnvYieldMs: "500", EnvMaxOutputChars: "5000", EnvPendingMaxOutputChars: "2000", EnvJobTTLMs: "120000"},
			Config{YieldMs: 500, MaxOutputChars: 5000, PendingMaxOutputChars: 2000, JobTTLMs: 120000}},
		{"values below the range are clamped up", map[string]string{EnvYieldMs: "1", EnvMaxOutputChars: "5", EnvPendingMaxOutputChars: "0", EnvJobTTLMs: "10"},
			Config{YieldMs: 10, MaxOutputChars: 1000, PendingMaxOutputChars: 1000, JobTTLMs: 60000}},
		{"values above the range are clamped down", map[string]string{EnvYieldMs: "1e9", EnvMaxOutputChars: "999999999", EnvPendingMaxOutputChars: "300000", EnvJobTTLMs: "99999999999"},
			Config{YieldMs: 120000, MaxOutputChars: 200000, PendingMaxOutputChars: 200000, JobTTLMs: 10800000}},
		{"values that do not parse are ignored", map[string]string{EnvYieldMs: "soon", EnvMaxOutputChars: "", EnvJobTTLMs: "NaN"}, Config{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ConfigFromEnv(env(c.vars)))
		})
	}
	f := false
	assert.Equal(t, Config{NotifyOnExit: &f, NotifyOnExitEmptySuccess: true},
		ConfigFromEnv(env(map[string]string{EnvNotifyOnExit: "false", EnvNotifyOnExitEmpty: "1"})))

	t.Run("resolved settings clamp a literal Config too", func(t *testing.T) {
		st, err := resolveConfig(Config{YieldMs: -5, MaxOutputChars: 1500, PendingMaxOutputChars: 100000, JobTTLMs: 1, TimeoutSec: -1}, env(nil))
		require.NoError(t, err)
		assert.Equal(t, 10*time.Millisecond, st.yield)
		assert.Equal(t, 1500, st.maxChars)
		assert.Equal(t, 1500, st.pendingChars, "pending never above the aggregate cap")
		assert.Equal(t, time.Minute, st.ttl)
		assert.Zero(t, st.timeout)
		assert.True(t, st.notifyOnExit)
	})
	t.Run("the shell follows SHELL, with fish replaced", func(t *testing.T) {
		assert.Equal(t, "sh", defaultShell(env(nil)))
		assert.Equal(t, "/bin/zsh", defaultShell(env(map[string]string{"SHELL": "/bin/zsh"})))
		assert.NotContains(t, defaultShell(env(map[string]string{"SHELL": "/usr/bin/fish"})), "fish")
	})
	t.Run("bad settings are refused", func(t *testing.T) {
		for _, c := range []Config{{ShellMarker: "novalue"}, {Workdir: "/does/not/exist"}, {Host: "mars"}, {Host: "node"}, {Security: "lax"}, {Ask: "sometimes"}} {
			_, err := NewRegistry(c)
			assert.Error(t, err, "%+v", c)
		}
	})
	t.Run("yield and timeout parameters are clamped", func(t *testing.T) {
		assert.Equal(t, 10*time.Millisecond, clampYield(0))
		assert.Equal(t, 10*time.Millisecond, clampYield(-100))
		assert.Equal(t, 120*time.Second, clampYield(1e12))
		assert.Equal(t, 1500*time.Millisecond, clampYield(1500))
		d, msg := resolveTimeout(ptr(-3.0), time.Hour)
		assert.Zero(t, d)
		assert.Empty(t, msg)
		d, _ = resolveTimeout(nil, time.Hour)
		assert.Equal(t, time.Hour, d)
		d, _ = resolveTimeout(ptr(0.25), time.Hour)
		assert.Equal(t, 250*time.Millisecond, d)
	})
}

func TestSlugIDs(t *testing.T) {
	taken := map[string]bool{}
	for range 3000 {
		id := newSlug(func(s string) bool { return taken[s] })
		require.False(t, taken[id])
		taken[id] = true
	}
	assert.Len(t, taken, 3000)
	// Everything two words can name is taken: collisions fall back to suffixes.
	all := func(string) bool { return false }
	assert.Regexp(t, `^[a-z]+-[a-z]+$`, newSlug(all))
	base := 0
	id := newSlug(func(s string) bool { base++; return base <= 1 })
	assert.Regexp(t, `^[a-z]+-[a-z]+-2$`, id)
}

func TestRuneRing(t *testing.T) {
	r := runeRing{limit: 5}
	r.append([]byte("héllo"), 5)
	assert.Equal(t, "héllo", r.String())
	assert.Zero(t, r.dropped)
	r.append([]byte("wö"), 2)
	assert.Equal(t, "llowö", r.String())
	assert.Equal(t, int64(2), r.dropped)
	r.append([]byte("0123456789"), 10)
	assert.Equal(t, "56789", r.String())
	assert.Equal(t, "789", r.tail(3))
}

func TestPendingBufKeepsArrivalOrderAndPerStreamCaps(t *testing.T) {
	q := pendingBuf{limit: 4}
	q.append(streamStdout, []byte("ab"), 2)
	q.append(streamStderr, []byte("XY"), 2)
	q.append(streamStdout, []byte("cd"), 2)
	text, dropped := q.drain()
	assert.Equal(t, "abXYcd", text)
	assert.False(t, dropped)

	q.append(streamStdout, []byte("abc"), 3)
	q.append(streamStderr, []byte("X"), 1)
	q.append(streamStdout, []byte("def"), 3) // stdout over by 2: "ab" goes
	text, dropped = q.drain()
	assert.Equal(t, "cXdef", text)
	assert.True(t, dropped)
	assert.True(t, q.empty())
}

// FuzzOutputBuf checks the ring buffer and pending buffers against a naive model.
func FuzzOutputBuf(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), []byte{0, 1, 0, 2}, uint8(3))
	f.Add([]byte("héllo wörld 你好 😀"), []byte{1, 1, 1}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, ops []byte, capSeed uint8) {
		limit := int(capSeed%16) + 1
		text := []rune(strings.ToValidUTF8(string(data), "?"))
		o := newOutputBuf(limit, limit)
		var model []rune
		var pendModel [][2][]rune // chunks by stream
		_ = pendModel
		pend := [2][]rune{}
		var order []int // stream of each pending rune, in arrival order
		var orderRunes []rune
		for i := 0; len(text) > 0 && i < len(ops); i++ {
			op := ops[i]
			if op%4 == 3 {
				got, _ := o.pending.drain()
				assert.Equal(t, string(orderRunes), got)
				order, orderRunes, pend = nil, nil, [2][]rune{}
				continue
			}
			s := streamID(op % 2)
			n := min(int(op/4)%7+1, len(text))
			chunk := text[:n]
			text = text[n:]
			o.add(s, []byte(string(chunk)), n)
			model = append(model, chunk...)
			if len(model) > limit {
				model = model[len(model)-limit:]
			}
			pend[s] = append(pend[s], chunk...)
			for _, r := range chunk {
				order = append(order, int(s))
				orderRunes = append(orderRunes, r)
			}
			// Drop the oldest runes of stream s beyond the cap.
			for over := len(pend[s]) - limit; over > 0; over-- {
				for j := range order {
					if order[j] == int(s) {
						order = append(order[:j], order[j+1:]...)
						orderRunes = append(orderRunes[:j], orderRunes[j+1:]...)
						break
					}
				}
				pend[s] = pend[s][1:]
			}
			require.Equal(t, string(model), o.agg.String())
			require.True(t, utf8.Valid(o.agg.bytes()))
			require.LessOrEqual(t, o.agg.runes, limit)
		}
		got, _ := o.pending.drain()
		assert.Equal(t, string(orderRunes), got)
	})
}
