package bgexec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeImports are the packages a README snippet may use without an
// import clause of its own.
var readmeImports = []string{"context", "encoding/json", "fmt", "os", "github.com/bgexec/bgexec"}

// readmeParams are the names README snippets use without declaring them:
// what the README's first snippets set up, or the embedding program
// provides.
const readmeParams = "ctx context.Context, agent *bgexec.Scope, myRuntime bgexec.Notifier, myApprover bgexec.Approver"

// TestReadmeSnippetsCompile type-checks every ```go block of README.md
// against the package's exported API, so a snippet that uses a name the
// package does not export (or no longer has) fails here.
//
// The wrapping rule: a block that starts with a package clause is checked
// as a file as it is. Any other block is a fragment: it becomes the body
// of a function of its own whose parameters are readmeParams, in a file
// that imports readmeImports. A "…" outside comments and strings stands
// for code left out and is dropped. Errors go/types calls soft (a
// variable declared and not used, an import not used) are allowed, since
// a fragment shows a step, not a whole program; every other error fails.
func TestReadmeSnippetsCompile(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := goBlocks(string(readme))
	require.NotEmpty(t, blocks, "README.md has no ```go block")
	imp := exportImporter(t)
	for _, b := range blocks {
		if err := checkSnippet(imp, b.text); err != nil {
			t.Errorf("README.md line %d: the Go snippet does not compile against the package:\n%v\n%s", b.line, err, b.text)
		}
	}

	// The check itself must catch what it is for: a name the package does
	// not export, used bare (the old ptr helper) or qualified.
	for _, bad := range []string{
		`res, _ := agent.Exec(ctx, &bgexec.ExecRequest{Command: "true", YieldMs: ptr(2000.0)})`,
		`_ = bgexec.resolveConfig`,
		`agent.Exec(ctx, &bgexec.ExecRequest{Cmd: "true"})`,
	} {
		require.Error(t, checkSnippet(imp, bad), "a snippet that should not compile passed: %s", bad)
	}
}

type snippet struct {
	line int // of the block's first line of code, 1-based
	text string
}

// goBlocks returns the bodies of the ```go fenced blocks of a Markdown text.
func goBlocks(md string) []snippet {
	var out []snippet
	var cur *snippet
	var body strings.Builder
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```go":
			cur = &snippet{line: i + 2}
			body.Reset()
		case cur != nil && trimmed == "```":
			cur.text = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	return out
}

// checkSnippet wraps a snippet as the test's doc says and type-checks it.
func checkSnippet(imp types.Importer, text string) error {
	src := text
	if !strings.HasPrefix(strings.TrimSpace(text), "package ") {
		var sb strings.Builder
		sb.WriteString("package readme\n\nimport (\n")
		for _, p := range readmeImports {
			fmt.Fprintf(&sb, "\t%q\n", p)
		}
		fmt.Fprintf(&sb, ")\n\nfunc snippet(%s) {\n", readmeParams)
		// The wrapper adds 9 + len(readmeImports) lines before the text;
		// errors name positions in the wrapped file.
		sb.WriteString(dropEllipses(text))
		sb.WriteString("\n}\n")
		src = sb.String()
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "snippet.go", src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	var hard []error
	conf := types.Config{
		Importer:  imp,
		GoVersion: "go1.26",
		Error: func(err error) {
			var te types.Error
			if errors.As(err, &te) && te.Soft {
				return
			}
			hard = append(hard, err)
		},
	}
	_, _ = conf.Check("readme", fset, []*ast.File{f}, nil)
	return errors.Join(hard...)
}

// dropEllipses removes every "…" token outside comments and strings: it
// stands for code the snippet leaves out.
func dropEllipses(text string) string {
	src := []byte(text)
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, func(token.Position, string) {}, scanner.ScanComments)
	var cuts []int
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.ILLEGAL && lit == "…" {
			cuts = append(cuts, file.Offset(pos))
		}
	}
	for i := len(cuts) - 1; i >= 0; i-- {
		src = append(src[:cuts[i]], src[cuts[i]+len("…"):]...)
	}
	return string(src)
}

// exportImporter returns an importer that reads the compiler's export
// data of readmeImports, which one `go list -export` builds (from the
// build cache, once the package was built).
func exportImporter(t *testing.T) types.Importer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	args := append([]string{"list", "-export", "-f", "{{.ImportPath}}\t{{.Export}}"}, readmeImports...)
	cmd := exec.CommandContext(ctx, "go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list -export: %s", stderr.String())
	files := make(map[string]string)
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		path, file, ok := strings.Cut(line, "\t")
		require.True(t, ok && file != "", "go list -export gave no export data: %q", line)
		files[path] = file
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("a README snippet may import only %v, not %q", readmeImports, path)
		}
		return os.Open(file)
	})
}
