//go:build linux

package bgexec_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/bgexec/bgexec"
)

// With Config.SpillDir, a result whose text was cut names a file that
// holds the whole output.
func ExampleConfig_spillDir() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "spill")
	defer os.RemoveAll(dir)
	reg, err := bgexec.NewRegistry(bgexec.Config{SpillDir: dir, MaxOutputChars: 1000})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Close(ctx)

	// 3000 lines of 10 characters: the text keeps the last 1000 characters.
	res, _ := reg.Scope("agent:main:main").Exec(ctx, &bgexec.ExecRequest{
		Command: `i=0; while [ $i -lt 3000 ]; do printf 'line %04d\n' $i; i=$((i+1)); done`,
	})
	fmt.Println(strings.Contains(res.Text(), "[The full output, with what this text leaves out, is in the file "+res.Details.OutputFile))
	b, _ := os.ReadFile(res.Details.OutputFile)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	fmt.Println(len(b), len(lines), lines[0], lines[len(lines)-1])
	// Output:
	// true
	// 30000 3000 line 0000 line 2999
}
