package session

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bgexec/bgexec/internal/termtext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlainBytesAreWhatTheCleanerKeeps(t *testing.T) {
	for b := range 256 {
		var cl termtext.Cleaner
		in := []byte{'a', byte(b), 'a'}
		out, n, _ := cl.Append(nil, in)
		out2, n2 := cl.Flush(out)
		kept := bytes.Equal(out2, in) && n+n2 == 3
		assert.Equal(t, kept, plainByte[b], "byte %#02x", b)
	}
}

func TestIsPlainFindsABadByteAnywhere(t *testing.T) {
	line := []byte(strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz \t\r", 3) + "\n")
	for size := range 200 {
		p := bytes.Repeat(line, 2)[:size]
		ok, lfs := isPlain(p)
		require.True(t, ok, "size %d", size)
		require.Equal(t, bytes.Count(p, nl), lfs, "size %d", size)
		for i := range size {
			for _, b := range []byte{0x00, 0x07, 0x08, 0x0b, 0x0c, 0x0e, 0x1b, 0x1f, 0x7f, 0x80, 0x9b, 0xc2, 0xe2, 0xff} {
				q := bytes.Clone(p)
				q[i] = b
				ok, _ := isPlain(q)
				require.False(t, ok, "size %d, %#02x at %d", size, b, i)
			}
		}
	}
}

func TestPlainPrefixStopsOnlyWhereItMust(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 5))
	passes := func(b byte) bool { return b == '\n' || (b >= 0x20 && b < 0x7f) }
	variants := plainPrefixVariants(t)
	variants = append(variants, plainPrefixVariant{"plainPrefixWords", 8, func(p []byte) (int, int) {
		k := plainPrefixWords(p)
		return k, bytes.Count(p[:k], nl)
	}})
	for _, f := range variants {
		for range 20000 {
			p := make([]byte, rng.IntN(300))
			for i := range p {
				p[i] = "abc XYZ~!\n"[rng.IntN(10)]
			}
			k, lfs := f.fn(p)
			require.LessOrEqual(t, k, len(p), f.name)
			require.GreaterOrEqual(t, k, len(p)&^(f.block-1), "%s: a plain stream of %d bytes", f.name, len(p))
			require.Equal(t, bytes.Count(p[:k], nl), lfs, "%s: LFs in a prefix of %d", f.name, k)
			if len(p) > 0 && rng.IntN(2) == 0 {
				i := rng.IntN(len(p))
				p[i] = byte(rng.IntN(256))
				k, lfs = f.fn(p)
				if !passes(p[i]) {
					require.LessOrEqual(t, k, i, "%s: %#02x at %d", f.name, p[i], i)
				}
				require.Equal(t, bytes.Count(p[:k], nl), lfs, "%s: LFs in a prefix of %d", f.name, k)
			}
			for i, b := range p[:k] {
				require.True(t, passes(b), "%s: %#02x at %d within the prefix of %d", f.name, b, i, k)
			}
		}
	}
}

// TestPlainPrefixEveryByteInEveryLane puts each of the 256 byte values at
// each position of a 128-byte plain text with LFs: the prefix must stop
// at or before it exactly when the byte is not printable ASCII or LF, and
// count the LFs before where it stops.
func TestPlainPrefixEveryByteInEveryLane(t *testing.T) {
	base := []byte(strings.Repeat("ab\ncd ~\n!", 15)[:128])
	for _, f := range plainPrefixVariants(t) {
		for b := range 256 {
			for i := range len(base) {
				p := bytes.Clone(base)
				p[i] = byte(b)
				k, lfs := f.fn(p)
				if b == '\n' || (b >= 0x20 && b < 0x7f) {
					require.Equal(t, len(p), k, "%s: %#02x at %d", f.name, b, i)
				} else {
					require.LessOrEqual(t, k, i, "%s: %#02x at %d", f.name, b, i)
					require.GreaterOrEqual(t, k, i&^(f.block-1), "%s: %#02x at %d", f.name, b, i)
				}
				require.Equal(t, bytes.Count(p[:k], nl), lfs, "%s: %#02x at %d", f.name, b, i)
			}
		}
	}
}

// plainPrefixVariant is one implementation of plainPrefix; block is the
// size of the blocks it passes over (the prefix is a multiple of it, and
// a plain text leaves less than a block).
type plainPrefixVariant struct {
	name  string
	block int
	fn    func([]byte) (int, int)
}

func TestCleanerAtRest(t *testing.T) {
	for _, tc := range []struct {
		fed  string
		rest bool
	}{
		{"", true},
		{"plain text\r\n\t", true},
		{"x\x1b", false},             // ESC
		{"x\x1b(", false},            // ESC and an intermediate
		{"x\x1b[", false},            // CSI open
		{"x\x1b[1;3", false},         // CSI parameters
		{"\x1b[31mred\x1b[0m", true}, // CSIs ended
		{"\x1b]0;title", false},      // OSC open
		{"\x1b]0;title\x07", true},   // OSC ended by BEL
		{"\x1bPdata", false},         // DCS open
		{"\x1bPdata\x1b\\", true},    // DCS ended by ST
		{"\xc2\x9b", false},          // C1 CSI
		{"caf\xc3", false},           // half of é carried
		{"\xe2\x82", false},          // two thirds of € carried
		{"caf\xc3\xa9 \xe2\x82\xac", true},
		{"\xff", true}, // invalid: U+FFFD, nothing carried
	} {
		var cl termtext.Cleaner
		cl.Append(nil, []byte(tc.fed))
		assert.Equal(t, tc.rest, cleanerAtRest(&cl), "after %q", tc.fed)
	}
}

// cleanChunks runs chunks through a streamCleaner the way readStream does
// and returns the text and its code points.
func cleanChunks(pty bool, chunks [][]byte) (string, int) {
	sc := streamCleaner{pty: pty}
	var out []byte
	total := 0
	for _, p := range chunks {
		if ok, lfs := sc.plain(p); ok {
			if lfs != bytes.Count(p, nl) {
				panic(fmt.Sprintf("plain counted %d LFs in %q", lfs, p))
			}
			out = append(out, p...)
			total += len(p)
			continue
		}
		text, n, _ := sc.clean(nil, p)
		out = append(out, text...)
		total += n
	}
	text, n := sc.flush()
	return string(append(out, text...)), total + n
}

// cleanWhole is the reference: one Cleaner (and LineEnds) over the whole
// stream in one call.
func cleanWhole(pty bool, stream []byte) (string, int) {
	var cl termtext.Cleaner
	text, n, _ := cl.Append(nil, stream)
	if pty {
		var le termtext.LineEnds
		var removed int
		text, removed = le.Apply(text)
		n -= removed
	}
	text, m := cl.Flush(text)
	return string(text), n + m
}

// streamPieces are the parts random streams are built of: plain lines and
// everything the cleaner changes, so cuts fall inside sequences.
var streamPieces = []string{
	"plain line of text\n", "tab\there\r\n", "progress 50%\r", "\r\n", "\n",
	"\x1b[31m", "\x1b[0m", "\x1b]0;window title\x07", "\x1bPdcs data\x1b\\", "\x1b[?1h", "\x1b[6n",
	"caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xe2\x80\x8b", // é, €, 😀, ZWSP (removed)
	"\xff", "\xe2\x82", "\xc3", // invalid and truncated UTF-8
	"\x00", "\x07", "\x08", "\x7f", "\xc2\x9b1m", "\xc2\x9c",
}

func randomStream(rng *rand.Rand, pieces int) []byte {
	var b []byte
	for range pieces {
		if rng.IntN(3) == 0 {
			b = append(b, bytes.Repeat([]byte("0123456789"), 1+rng.IntN(20))...)
			continue
		}
		b = append(b, streamPieces[rng.IntN(len(streamPieces))]...)
	}
	return b
}

func randomCuts(rng *rand.Rand, stream []byte) [][]byte {
	var chunks [][]byte
	for len(stream) > 0 {
		n := min(len(stream), 1+rng.IntN(40))
		if rng.IntN(4) == 0 {
			n = min(len(stream), 1+rng.IntN(3)) // tiny reads split sequences
		}
		chunks = append(chunks, stream[:n])
		stream = stream[n:]
	}
	return chunks
}

func TestStreamCleanerMatchesOneCleaner(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 3))
	for i := range 3000 {
		stream := randomStream(rng, 1+rng.IntN(30))
		chunks := randomCuts(rng, stream)
		for _, pty := range []bool{false, true} {
			want, wantN := cleanWhole(pty, stream)
			got, gotN := cleanChunks(pty, chunks)
			require.Equal(t, want, got, "case %d, pty %v, chunks %q", i, pty, chunks)
			require.Equal(t, wantN, gotN, "case %d, pty %v: code points", i, pty)
		}
	}
}

func TestPlainReadAfterAnOpenSequenceIsCleaned(t *testing.T) {
	for _, tc := range []struct {
		chunks []string
		want   string
	}{
		{[]string{"a\x1b", "[31mred\n"}, "ared\n"},                         // ESC, then a CSI that looks plain
		{[]string{"a\x1b[3", "1mred\n"}, "ared\n"},                         // parameters split
		{[]string{"\x1b]0;ti", "tle\n still title\x07after\n"}, "after\n"}, // an OSC swallows LF
		{[]string{"x\xe2", "abc\n"}, "x\ufffdabc\n"},                       // a carried prefix, then ASCII
		{[]string{"x\xe2\x82", "\xac\n"}, "x€\n"},                          // € split
		{[]string{"a\x00", "b\n"}, "a\\x00b\n"},                            // a control, then plain
	} {
		chunks := make([][]byte, len(tc.chunks))
		for i, c := range tc.chunks {
			chunks[i] = []byte(c)
		}
		got, _ := cleanChunks(false, chunks)
		assert.Equal(t, tc.want, got, "chunks %q", tc.chunks)
	}
}

func FuzzStreamCleaner(f *testing.F) {
	f.Add([]byte("a\x1b[31mb\r\nc\xe2\x82\xac\xff\x00"), []byte{1, 3, 2, 9})
	f.Add([]byte("\x1b]0;t\nx\x07y\n"), []byte{2, 1, 1})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		var chunks [][]byte
		rest := stream
		for _, c := range cuts {
			n := min(len(rest), int(c))
			chunks, rest = append(chunks, rest[:n]), rest[n:]
		}
		chunks = append(chunks, rest)
		for _, pty := range []bool{false, true} {
			want, wantN := cleanWhole(pty, stream)
			got, gotN := cleanChunks(pty, chunks)
			require.Equal(t, want, got)
			require.Equal(t, wantN, gotN)
		}
	})
}

// TestPlainReadsKeepWhatPollAndLogSee feeds a session reads (plain ones,
// ones the cleaner changes, sequences and UTF-8 split across reads) and
// checks what poll, log and the aggregate return, before and after the
// caps, against the buffers fed by one Cleaner over the same reads.
func TestPlainReadsKeepWhatPollAndLogSee(t *testing.T) {
	const maxChars, pendingChars = 700, 250
	rng := rand.New(rand.NewPCG(29, 4))
	for round := range 20 {
		s, f, _, _ := start(t, Options{ID: "a-b", MaxChars: maxChars, PendingChars: pendingChars})
		model := newOutput(maxChars, pendingChars)
		var cl termtext.Cleaner
		ctx := context.Background()
		for step := range 40 {
			for _, p := range randomCuts(rng, randomStream(rng, 1+rng.IntN(8))) {
				_, err := f.out.Write(p)
				require.NoError(t, err)
				text, n, _ := cl.Append(nil, p)
				model.add(Stdout, text, n)
			}
			// The reader takes this empty write only after it recorded the
			// reads before it.
			_, err := f.out.Write(nil)
			require.NoError(t, err)
			if step%3 == 2 {
				dr := s.Poll(ctx, 0)
				want, loss := model.drain()
				require.Equal(t, want, dr.Text, "round %d step %d: poll", round, step)
				require.Equal(t, loss, dr.Loss, "round %d step %d: loss", round, step)
			}
			agg, _ := s.Aggregated()
			require.Equal(t, model.agg.String(), agg, "round %d step %d: aggregate", round, step)
			pg, _ := s.Page(ptr64(0), nil, 1000)
			want := model.page(ptr64(0), nil, 1000)
			require.Equal(t, want, pg, "round %d step %d: log", round, step)
		}
		require.True(t, model.truncated(), "the retention cap was reached")
		f.exit(0)
	}
}
