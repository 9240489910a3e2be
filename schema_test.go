//go:build linux

package bgexec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compileForTest compiles a tool's schema with a fresh compiler, independent
// of the package's cached copy, so the tests check the published JSON itself.
func compileForTest(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	for _, def := range ToolDefinitions() {
		if def.Name != name {
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(def.InputSchema))
		require.NoError(t, err)
		c := jsonschema.NewCompiler()
		require.NoError(t, c.AddResource("test:///"+name+".json", doc))
		sch, err := c.Compile("test:///" + name + ".json")
		require.NoError(t, err, "the %s schema must be a valid draft 2020-12 schema", name)
		return sch
	}
	t.Fatalf("no tool definition named %q", name)
	return nil
}

// strictDecode decodes like a tool framework should: unknown fields are errors.
func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func validateWith(t *testing.T, sch *jsonschema.Schema, args string) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	require.NoError(t, err, "test input must be JSON: %s", args)
	return sch.Validate(v)
}

// schemaProperties decodes a tool schema's properties.
func schemaProperties(t *testing.T, name string) map[string]map[string]any {
	t.Helper()
	for _, def := range ToolDefinitions() {
		if def.Name == name {
			var s struct {
				Schema               string                    `json:"$schema"`
				Type                 string                    `json:"type"`
				Properties           map[string]map[string]any `json:"properties"`
				Required             []string                  `json:"required"`
				AdditionalProperties *bool                     `json:"additionalProperties"`
			}
			require.NoError(t, json.Unmarshal(def.InputSchema, &s))
			require.Equal(t, "https://json-schema.org/draft/2020-12/schema", s.Schema)
			require.Equal(t, "object", s.Type)
			require.NotNil(t, s.AdditionalProperties)
			require.False(t, *s.AdditionalProperties, "unknown fields must be refused")
			return s.Properties
		}
	}
	t.Fatalf("no tool definition named %q", name)
	return nil
}

func TestToolDefinitions(t *testing.T) {
	t.Parallel()
	t.Run("lists exec then process with descriptions and object schemas", func(t *testing.T) {
		defs := ToolDefinitions()
		require.Len(t, defs, 2)
		assert.Equal(t, ToolExec, defs[0].Name)
		assert.Equal(t, ToolProcess, defs[1].Name)
		for _, d := range defs {
			assert.NotEmpty(t, d.Description)
			assert.True(t, json.Valid(d.InputSchema), "%s schema is JSON", d.Name)
		}
	})

	t.Run("marshals to the name, description, inputSchema shape", func(t *testing.T) {
		b, err := json.Marshal(ToolDefinitions())
		require.NoError(t, err)
		var got []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"inputSchema"`
		}
		require.NoError(t, json.Unmarshal(b, &got))
		require.Len(t, got, 2)
		assert.Equal(t, "exec", got[0].Name)
		assert.Equal(t, "object", got[0].InputSchema["type"])
		assert.Equal(t, []any{"command"}, got[0].InputSchema["required"])
		assert.Equal(t, []any{"action"}, got[1].InputSchema["required"])
	})

	t.Run("returns fresh values each call", func(t *testing.T) {
		a := ToolDefinitions()
		want := string(a[0].InputSchema)
		a[0].Name = "changed"
		a[0].Description = ""
		for i := range a[0].InputSchema {
			a[0].InputSchema[i] = ' '
		}
		b := ToolDefinitions()
		assert.Equal(t, ToolExec, b[0].Name)
		assert.NotEmpty(t, b[0].Description)
		assert.Equal(t, want, string(b[0].InputSchema))
	})

	t.Run("descriptions teach start once, the completion wake and wait instead of polling loops", func(t *testing.T) {
		defs := ToolDefinitions()
		exec, process := defs[0].Description, defs[1].Description
		for _, s := range []string{"yieldMs", "background", "sessionId", "process wait", "system message", "do not poll or sleep in a loop"} {
			assert.Contains(t, exec, s)
		}
		for _, s := range []string{"not for scheduling", "wait", "list", "send-keys"} {
			assert.Contains(t, process, s)
		}
	})
}

func TestSchemaAcceptsSpecExamples(t *testing.T) {
	t.Parallel()
	// The tool-call examples of the user's tool description, verbatim, with "<id>" as given.
	examples := []string{
		`{"tool":"exec","command":"sleep 5 && echo done","yieldMs":1000}`,
		`{"tool":"process","action":"poll","sessionId":"<id>"}`,
		`{"tool":"exec","command":"npm run build","background":true}`,
		`{"tool":"process","action":"write","sessionId":"<id>","data":"y\n"}`,
		`{"tool":"process","action":"send-keys","sessionId":"<id>","keys":["C-c"]}`,
		`{"tool":"process","action":"submit","sessionId":"<id>"}`,
		`{"tool":"process","action":"paste","sessionId":"<id>","text":"line1\nline2\n"}`,
	}
	schemas := map[string]*jsonschema.Schema{
		ToolExec:    compileForTest(t, ToolExec),
		ToolProcess: compileForTest(t, ToolProcess),
	}
	for _, ex := range examples {
		t.Run(ex, func(t *testing.T) {
			var call map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(ex), &call))
			var tool string
			require.NoError(t, json.Unmarshal(call["tool"], &tool))
			delete(call, "tool")
			args, err := json.Marshal(call)
			require.NoError(t, err)

			assert.NoError(t, validateWith(t, schemas[tool], string(args)))
			assert.Empty(t, validateToolArgs(tool, args))
		})
	}
}

func TestSchemaAcceptsEveryFieldInRange(t *testing.T) {
	t.Parallel()
	valid := []struct{ tool, args string }{
		{"exec", `{"command":"ls","workdir":"/tmp","env":{"FOO":"bar"},"yieldMs":0,"background":false,"timeout":1.5,"pty":true,"elevated":false,"host":"auto","security":"allowlist","ask":"on-miss","stdin":"pipe"}`},
		{"exec", `{"command":"ls","timeout":-1}`},
		{"exec", `{"command":"ls","timeout":0,"yieldMs":-5}`},
		{"exec", `{"command":"ls","timeout":2592000,"yieldMs":500000}`},
		{"exec", `{"command":""}`},
		{"process", `{"action":"list"}`},
		{"process", `{"action":"poll","sessionId":"a","timeout":0}`},
		{"process", `{"action":"poll","sessionId":"a","timeout":120000}`},
		{"process", `{"action":"poll","sessionId":"a","timeout":"5000"}`},
		{"process", `{"action":"poll","sessionId":"a","timeout":" 2500.5 "}`},
		{"process", `{"action":"wait","sessionId":"a","timeout":600000,"pattern":"ready|listening","port":8080}`},
		{"process", `{"action":"wait","sessionId":"a","timeout":"600000"}`},
		{"process", `{"action":"log","sessionId":"a","offset":0,"limit":1}`},
		{"process", `{"action":"log","sessionId":"a","offset":-1,"limit":0}`},
		{"process", `{"action":"log","sessionId":"a","offset":1.5,"limit":-2.5}`},
		{"process", `{"action":"restart","sessionId":"a"}`},
		{"process", `{"action":"POLL","sessionId":"a"}`},
		{"process", `{"action":""}`},
		{"process", `{"action":"write","sessionId":"a","data":"","eof":true}`},
		{"process", `{"action":"send-keys","sessionId":"a","keys":[],"hex":["1b","0x03"],"literal":"x"}`},
		{"process", `{"action":"paste","sessionId":"a","text":"x","bracketed":false}`},
		{"process", `{"action":"resize","sessionId":"a","cols":1,"rows":1000}`},
		{"process", `{"action":"wait","sessionId":"a","port":1}`},
		{"process", `{"action":"wait","sessionId":"a","port":65535}`},
	}
	for _, tc := range valid {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			assert.NoError(t, validateWith(t, compileForTest(t, tc.tool), tc.args))
			assert.Empty(t, validateToolArgs(tc.tool, json.RawMessage(tc.args)))
		})
	}
}

func TestSchemaRejectsInvalidCalls(t *testing.T) {
	t.Parallel()
	invalid := []struct {
		name, tool, args string
		field            string // the JSON pointer the failure must name
	}{
		{"missing command", "exec", `{"yieldMs":1000}`, "/command"},
		{"empty arguments lack command", "exec", ``, "/command"},
		{"command of the wrong type", "exec", `{"command":["ls"]}`, "/command"},
		{"yieldMs as a string", "exec", `{"command":"ls","yieldMs":"1000"}`, "/yieldMs"},
		{"background as a string", "exec", `{"command":"ls","background":"true"}`, "/background"},
		{"timeout beyond 30 days", "exec", `{"command":"ls","timeout":2592001}`, "/timeout"},
		{"env value not a string", "exec", `{"command":"ls","env":{"N":1}}`, "/env/N"},
		{"env not an object", "exec", `{"command":"ls","env":["A=1"]}`, "/env"},
		{"unknown host", "exec", `{"command":"ls","host":"cloud"}`, "/host"},
		{"unknown security", "exec", `{"command":"ls","security":"none"}`, "/security"},
		{"unknown ask", "exec", `{"command":"ls","ask":"never"}`, "/ask"},
		{"unknown stdin", "exec", `{"command":"ls","stdin":"tty"}`, "/stdin"},
		{"unknown field", "exec", `{"command":"ls","cwd":"/tmp"}`, "/cwd"},
		{"field in the wrong case", "exec", `{"Command":"ls"}`, "/Command"},
		{"arguments not an object", "exec", `"ls"`, "/"},
		{"missing action", "process", `{"sessionId":"a"}`, "/action"},
		{"action not a string", "process", `{"action":5,"sessionId":"a"}`, "/action"},
		{"negative poll timeout", "process", `{"action":"poll","sessionId":"a","timeout":-1}`, "/timeout"},
		{"negative timeout as a string", "process", `{"action":"poll","sessionId":"a","timeout":"-1"}`, "/timeout"},
		{"non-numeric timeout string", "process", `{"action":"poll","sessionId":"a","timeout":"soon"}`, "/timeout"},
		{"wait timeout above 600000", "process", `{"action":"wait","sessionId":"a","timeout":600001}`, "/timeout"},
		{"wait timeout string above 600000", "process", `{"action":"wait","sessionId":"a","timeout":"600001"}`, "/timeout"},
		{"timeout as a boolean", "process", `{"action":"poll","sessionId":"a","timeout":true}`, "/timeout"},
		{"offset as a string", "process", `{"action":"log","sessionId":"a","offset":"4"}`, "/offset"},
		{"limit as a boolean", "process", `{"action":"log","sessionId":"a","limit":true}`, "/limit"},
		{"keys not an array", "process", `{"action":"send-keys","sessionId":"a","keys":"C-c"}`, "/keys"},
		{"hex entry not a string", "process", `{"action":"send-keys","sessionId":"a","hex":[27]}`, "/hex/0"},
		{"bracketed as a string", "process", `{"action":"paste","sessionId":"a","text":"x","bracketed":"no"}`, "/bracketed"},
		{"zero cols", "process", `{"action":"resize","sessionId":"a","cols":0,"rows":10}`, "/cols"},
		{"rows above 1000", "process", `{"action":"resize","sessionId":"a","cols":80,"rows":1001}`, "/rows"},
		{"port zero", "process", `{"action":"wait","sessionId":"a","port":0}`, "/port"},
		{"port above 65535", "process", `{"action":"wait","sessionId":"a","port":65536}`, "/port"},
		{"pattern not a string", "process", `{"action":"wait","sessionId":"a","pattern":1}`, "/pattern"},
		{"sessionId not a string", "process", `{"action":"poll","sessionId":7}`, "/sessionId"},
		{"unknown field", "process", `{"action":"list","all":true}`, "/all"},
	}
	for _, tc := range invalid {
		t.Run(tc.tool+" with "+tc.name+" fails", func(t *testing.T) {
			args := tc.args
			if args == "" {
				args = "{}"
			}
			assert.Error(t, validateWith(t, compileForTest(t, tc.tool), args), "the real validator must refuse it")

			text := validateToolArgs(tc.tool, json.RawMessage(tc.args))
			require.NotEmpty(t, text)
			assert.True(t, strings.HasPrefix(text, "Invalid arguments for "+tc.tool+": "), text)
			assert.Contains(t, text, tc.field+":", "the failure names the field")
			assert.True(t, strings.HasSuffix(text, "."), text)
		})
	}
}

func TestSchemaFailureTexts(t *testing.T) {
	t.Parallel()
	cases := []struct{ tool, args, want string }{
		{"exec", `{"command":"ls","yieldMs":"1000"}`, `Invalid arguments for exec: /yieldMs: got string, want number.`},
		{"exec", `{}`, `Invalid arguments for exec: /command: required but missing.`},
		{"exec", `{"command":"ls","cwd":"/"}`, `Invalid arguments for exec: /cwd: unknown field.`},
		{"process", `{"action":["poll"]}`, `Invalid arguments for process: /action: got array, want string.`},
		{"process", `{"action":"poll","timeout":-5}`, `Invalid arguments for process: /timeout: got -5, want at least 0.`},
		{"process", `{"action":"poll","timeout":"-5"}`, `Invalid arguments for process: /timeout: got "-5", want a number of milliseconds from 0 to 600000.`},
		{"process", `{"action":"resize","cols":0,"rows":2000}`, `Invalid arguments for process: /cols: got 0, want at least 1; /rows: got 2000, want at most 1000.`},
	}
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			assert.Equal(t, tc.want, validateToolArgs(tc.tool, json.RawMessage(tc.args)))
		})
	}
}

func TestSchemaValidationLeavesOtherErrorsToTheDecoder(t *testing.T) {
	t.Parallel()
	t.Run("an unknown tool passes", func(t *testing.T) {
		assert.Empty(t, validateToolArgs("shell", json.RawMessage(`{"command":"ls"}`)))
	})
	t.Run("malformed JSON passes", func(t *testing.T) {
		assert.Empty(t, validateToolArgs("exec", json.RawMessage(`{"command":`)))
		assert.Empty(t, validateToolArgs("exec", json.RawMessage(`{"command":"ls"} {}`)))
	})
}

func TestSchemaValidationIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				assert.Empty(t, validateToolArgs("exec", json.RawMessage(`{"command":"ls"}`)))
			} else {
				assert.NotEmpty(t, validateToolArgs("process", json.RawMessage(`{}`)))
			}
		})
	}
	wg.Wait()
}

// TestSchemaActionListMatchesTheProcessTool checks that the action property
// is a plain string (so an unknown action reaches the tool's own text) whose
// description lists exactly the actions of the unknown-action text.
func TestSchemaActionListMatchesTheProcessTool(t *testing.T) {
	t.Parallel()
	props := schemaProperties(t, ToolProcess)
	assert.NotContains(t, props["action"], "enum", "no enum: the tool answers unknown actions")
	desc, _ := props["action"]["description"].(string)
	assert.Contains(t, desc, "one of "+actionList+" (case-sensitive)")
	for _, a := range strings.Split(actionList, ", ") {
		if a != "list" && a != "reset-shell" { // the two that need no session
			assert.Contains(t, processActions, a, "the process tool handles %q", a)
		}
	}
	assert.Len(t, processActions, len(strings.Split(actionList, ", "))-2, "and no other")
}

// TestSchemaMatchesRequestStructs checks that every JSON field of the request
// structs is a schema property of the matching type, and vice versa.
func TestSchemaMatchesRequestStructs(t *testing.T) {
	t.Parallel()
	schemaType := func(name string, rt reflect.Type) any {
		if name == "offset" || name == "limit" {
			// Whole numbers in Go; JSON takes any number and floors it.
			return "number"
		}
		if rt == reflect.TypeFor[*Number]() {
			return []any{"number", "string"}
		}
		if rt.Kind() == reflect.Pointer {
			rt = rt.Elem()
		}
		switch rt.Kind() {
		case reflect.String:
			return "string"
		case reflect.Bool:
			return "boolean"
		case reflect.Int:
			return "integer"
		case reflect.Float64:
			return "number"
		case reflect.Slice:
			return "array"
		case reflect.Map:
			return "object"
		}
		t.Fatalf("no schema type for %v", rt)
		return nil
	}
	for _, tc := range []struct {
		tool string
		typ  reflect.Type
	}{
		{ToolExec, reflect.TypeFor[ExecRequest]()},
		{ToolProcess, reflect.TypeFor[ProcessRequest]()},
	} {
		t.Run(tc.tool+" matches "+tc.typ.Name(), func(t *testing.T) {
			props := schemaProperties(t, tc.tool)
			var fields []string
			for f := range tc.typ.Fields() {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				require.NotEmpty(t, name, "field %s has a json name", f.Name)
				fields = append(fields, name)
				p, ok := props[name]
				if !assert.True(t, ok, "schema has property %q", name) {
					continue
				}
				assert.Equal(t, schemaType(name, f.Type), p["type"], "type of %q", name)
				assert.NotEmpty(t, p["description"], "description of %q", name)
				if f.Type.Kind() == reflect.Slice {
					assert.Equal(t, map[string]any{"type": "string"}, p["items"], "items of %q", name)
				}
			}
			var names []string
			for n := range props {
				names = append(names, n)
			}
			slices.Sort(fields)
			slices.Sort(names)
			assert.Equal(t, fields, names, "the schema has no property the struct lacks")
		})
	}
}

func TestSchemaRoundTripsRequestStructs(t *testing.T) {
	t.Parallel()
	execSch := compileForTest(t, ToolExec)
	processSch := compileForTest(t, ToolProcess)

	t.Run("a full exec request survives JSON and validates", func(t *testing.T) {
		in := ExecRequest{
			Command: "npm run build", Workdir: "/src", Env: map[string]string{"CI": "1", "EMPTY": ""},
			YieldMs: ptr(2500.5), Background: true, Timeout: ptr(-1.0), PTY: true, Elevated: true,
			Host: "gateway", Security: "allowlist", Ask: "always", Stdin: "pipe",
		}
		b, err := json.Marshal(&in)
		require.NoError(t, err)
		assert.NoError(t, validateWith(t, execSch, string(b)))
		var out ExecRequest
		require.NoError(t, strictDecode(b, &out))
		assert.Equal(t, in, out)
	})

	t.Run("explicit zeros of optional pointers survive", func(t *testing.T) {
		in := ExecRequest{Command: "true", YieldMs: ptr(0.0), Timeout: ptr(0.0)}
		b, err := json.Marshal(&in)
		require.NoError(t, err)
		assert.JSONEq(t, `{"command":"true","yieldMs":0,"timeout":0}`, string(b))
		var out ExecRequest
		require.NoError(t, strictDecode(b, &out))
		assert.Equal(t, in, out)
	})

	t.Run("a minimal exec request is just the command", func(t *testing.T) {
		b, err := json.Marshal(&ExecRequest{Command: "ls"})
		require.NoError(t, err)
		assert.JSONEq(t, `{"command":"ls"}`, string(b))
	})

	t.Run("a full process request survives JSON and validates", func(t *testing.T) {
		timeout := Number(5000)
		in := ProcessRequest{
			Action: "send-keys", SessionID: "calm-otter", Data: "y\n", EOF: true,
			Keys: []string{"C-c", "Enter"}, Hex: []string{"1b", "0x03"}, Literal: "你好😀",
			Text: "line1\nline2\n", Bracketed: ptr(false), Offset: ptr(0), Limit: ptr(20),
			Timeout: &timeout, Cols: 80, Rows: 24, Pattern: `^ready\b`, Port: 8080,
		}
		b, err := json.Marshal(&in)
		require.NoError(t, err)
		assert.NoError(t, validateWith(t, processSch, string(b)))
		var out ProcessRequest
		require.NoError(t, strictDecode(b, &out))
		assert.Equal(t, in, out)
	})

	t.Run("a numeric-string timeout decodes to the same number", func(t *testing.T) {
		var a, b ProcessRequest
		require.NoError(t, strictDecode(json.RawMessage(`{"action":"poll","timeout":"5000"}`), &a))
		require.NoError(t, strictDecode(json.RawMessage(`{"action":"poll","timeout":5000}`), &b))
		assert.Equal(t, a, b)
	})

	t.Run("a minimal process request is just the action", func(t *testing.T) {
		b, err := json.Marshal(&ProcessRequest{Action: "list"})
		require.NoError(t, err)
		assert.JSONEq(t, `{"action":"list"}`, string(b))
	})
}
