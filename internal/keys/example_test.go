package keys_test

import (
	"fmt"

	"github.com/bgexec/bgexec/internal/keys"
)

func ExampleEncode() {
	data, warnings, err := keys.Encode(keys.Input{
		Literal: "vim",
		Hex:     []string{"0x0d", "zz"},
		Keys:    []string{"Escape", ":q!", "C-M-x", "M-Up", "Enter"},
	}, keys.CursorNormal)
	fmt.Printf("%q\n%q\n%v\n", data, warnings, err)
	// Output:
	// "vim\r\x1b:q!\x1b\x18\x1b[1;3A\r"
	// ["Invalid hex byte: zz"]
	// <nil>
}

func ExampleEncode_unknownCursorMode() {
	_, _, err := keys.Encode(keys.Input{Keys: []string{"Up"}}, keys.CursorUnknown)
	fmt.Println(err)
	// Output:
	// keys: cursor key mode is not known yet
}
