package bgexec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// toolProperties holds, per tool, the parameter names its schema defines.
// Like toolSchemas it is built once and never changes afterwards.
var toolProperties = sync.OnceValue(func() map[string][]string {
	out := make(map[string][]string, 2)
	for _, def := range ToolDefinitions() {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(def.InputSchema, &s); err != nil {
			// The schemas are constants covered by tests.
			panic(err)
		}
		for name := range s.Properties {
			out[def.Name] = append(out[def.Name], name)
		}
	}
	return out
})

// prepareArgs readies a tool call's JSON arguments for the schema and the
// decoder. A key given twice in one object, at any depth, is a failure
// text: the model, an approval prompt and the decoder could otherwise each
// read a different value. Top-level keys the tool does not define are
// removed and returned, in the order given, to be named in a warning. Keys
// match case-sensitively: "Command" is unknown, never "command"; since
// unknown keys are gone before decoding, encoding/json's case-insensitive
// field matching never sees them.
//
// Arguments that are not a JSON object are returned unchanged, for the
// schema and the decoder to report.
func prepareArgs(tool string, args json.RawMessage) (clean json.RawMessage, unknown []string, failureText string) {
	if len(bytes.TrimSpace(args)) == 0 {
		return args, nil, ""
	}
	keys, dup, ok := scanKeys(args)
	if ok && dup != "" {
		return nil, nil, fmt.Sprintf("Invalid arguments for %s: %s: given more than once; give each key once. Nothing was run.", tool, dup)
	} else if !ok {
		return args, nil, ""
	}
	known := toolProperties()[tool]
	for _, k := range keys {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return args, nil, ""
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return args, nil, ""
	}
	for _, k := range unknown {
		delete(obj, k)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return args, nil, ""
	}
	return b, unknown, ""
}

// unknownParamsWarning is the first line of a call that had unknown keys.
func unknownParamsWarning(keys []string) string {
	return "Warning: ignored unknown parameter(s): " + strings.Join(keys, ", ") + "."
}

// withFirstLine puts a warning line before a result's text: directly above
// other warning lines, else above a blank line.
func withFirstLine(res *Result, line string) {
	if res == nil || len(res.Content) == 0 {
		return
	}
	text := res.Content[0].Text
	sep := "\n\n"
	if strings.HasPrefix(text, "Warning: ") {
		sep = "\n"
	}
	res.Content[0].Text = line + sep + text
}

// scanKeys reads args once. It returns the top-level keys of the object in
// the order given, and the JSON pointer of the first key given twice in one
// object at any depth ("/command", "/env/A"), or "" when there is none. ok
// is false when args is not well-formed JSON.
func scanKeys(args []byte) (keys []string, dup string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	dup, err := walkDuplicates(dec, "", &keys)
	if err != nil {
		return nil, "", false
	}
	return keys, dup, true
}

// walkDuplicates reads one JSON value from dec, checking every object in it.
// The keys of the value itself, when it is an object, go to keys unless it
// is nil.
func walkDuplicates(dec *json.Decoder, at string, keys *[]string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		return "", nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", err
			}
			k, _ := kt.(string)
			here := at + "/" + k
			if seen[k] {
				return here, nil
			}
			seen[k] = true
			if keys != nil {
				*keys = append(*keys, k)
			}
			if p, err := walkDuplicates(dec, here, nil); err != nil || p != "" {
				return p, err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if p, err := walkDuplicates(dec, fmt.Sprintf("%s/%d", at, i), nil); err != nil || p != "" {
				return p, err
			}
		}
	default:
		return "", io.ErrUnexpectedEOF
	}
	_, err = dec.Token() // the closing delimiter
	return "", err
}
