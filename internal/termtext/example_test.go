package termtext_test

import (
	"fmt"

	"github.com/bgexec/bgexec/internal/termtext"
)

func ExampleCleaner() {
	var c termtext.Cleaner // one per stream
	reads := [][]byte{
		[]byte("\x1b[1;32mok\x1b"),      // a sequence split after ESC
		[]byte("[0m caf\xc3"),           // and a character split inside its UTF-8
		[]byte("\xa9\x1b[6n\x1b[?1h\n"), // a cursor query and application mode
	}
	var text []byte
	for _, p := range reads {
		var ev termtext.Events
		text, _, ev = c.Append(text, p)
		if ev.CursorQueries > 0 || ev.CursorMode != 0 {
			fmt.Printf("queries=%d mode=%+d\n", ev.CursorQueries, ev.CursorMode)
		}
	}
	text, _ = c.Flush(text)
	fmt.Printf("%q\n", text)
	// Output:
	// queries=1 mode=+1
	// "ok café\n"
}
