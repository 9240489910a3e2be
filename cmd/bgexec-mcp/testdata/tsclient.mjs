// Drives the server with the official TypeScript MCP SDK client, as the
// Go test TestTypeScriptClient runs it:
//   node tsclient.mjs stdio <server binary> [server args…]
//   node tsclient.mjs http <endpoint> <token>
//   node tsclient.mjs approve <server binary> -ask always -approval-mode wait [server args…]
//   node tsclient.mjs pending <server binary> -ask always [server args…]
// The last two answer the server's approval forms (elicitation) and check
// what each answer does: approve while exec waits for the answer, pending
// when exec returns approval-pending and the answer decides later.
// The client validates every structuredContent against the tool's
// outputSchema (ajv). Exits non-zero with a message on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, ...rest] = process.argv.slice(2);
function fail(msg) {
  console.error("FAIL: " + msg);
  process.exit(1);
}
const text = (res) => res.content.map((c) => c.text).join("");

const transport = mode === "http"
  ? new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers: { Authorization: "Bearer " + rest[0] } } })
  : new StdioClientTransport({ command: target, args: rest, stderr: "inherit" });
const client = new Client({ name: "ts-test", version: "0" }, { capabilities: { elicitation: { form: {} } } });
// The person: answers every approval form with the next scripted answer.
const forms = [];
let nextAnswer = { action: "accept", content: { decision: "allow-once" } };
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  forms.push(req.params);
  return nextAnswer;
});
await client.connect(transport);

// Hosts such as Claude Code and Codex give the model only structuredContent
// when a result has one: every result must carry its whole text there too.
const callTool = client.callTool.bind(client);
client.callTool = async (...args) => {
  const res = await callTool(...args);
  if (!res.structuredContent || res.structuredContent.text !== text(res)) {
    fail(`structuredContent.text is not the text of ${JSON.stringify(args[0])}: ${JSON.stringify(res)}`);
  }
  return res;
};

if (mode === "approve") {
  let res = await client.callTool({ name: "exec", arguments: { command: "echo TS-APPROVED" } });
  if (text(res) !== "TS-APPROVED") fail("allow-once did not run the command: " + text(res));
  const f = forms[0];
  if (!f || f.mode !== "form" || !f.message.includes("Command: echo TS-APPROVED")) fail("no approval form with the command: " + JSON.stringify(f));
  const choice = f.requestedSchema.properties.decision;
  if (JSON.stringify(choice.enum) !== JSON.stringify(["allow-once", "allow-session", "deny"])) fail("form choices: " + JSON.stringify(choice));

  nextAnswer = { action: "accept", content: { decision: "allow-session" } };
  res = await client.callTool({ name: "exec", arguments: { command: "echo TS-SESSION" } });
  nextAnswer = { action: "accept", content: { decision: "deny" } };
  res = await client.callTool({ name: "exec", arguments: { command: "echo TS-SESSION" } });
  if (text(res) !== "TS-SESSION" || forms.length !== 2) fail("allow-session asked again or did not run: " + text(res));
  res = await client.callTool({ name: "exec", arguments: { command: "echo TS-DENIED" } });
  if (!res.isError || text(res) !== "exec denied: the person denied it.") fail("deny: " + text(res));
  nextAnswer = { action: "decline" };
  res = await client.callTool({ name: "exec", arguments: { command: "echo TS-DENIED" } });
  if (!text(res).includes("declined")) fail("decline: " + text(res));
  await client.close();
  console.log("OK");
  process.exit(0);
}

if (mode === "pending") {
  // notices lists until the notices of the results contain every want.
  const notices = async (...want) => {
    const seen = [];
    for (let i = 0; i < 200; i++) {
      const r = await client.callTool({ name: "process", arguments: { action: "list" } });
      for (const l of text(r).split("\n")) if (l.startsWith("[bgexec] ")) seen.push(l);
      if (want.every((w) => seen.some((l) => l.includes(w)))) return seen;
      await new Promise((ok) => setTimeout(ok, 50));
    }
    fail("no notices " + JSON.stringify(want) + " in " + JSON.stringify(seen));
  };
  let res = await client.callTool({ name: "exec", arguments: { command: "echo TS-PENDING" } });
  let sc = res.structuredContent;
  if (sc.status !== "approval-pending" || !sc.approvalId || res.isError) fail("exec did not return approval-pending: " + JSON.stringify(res));
  await notices("Exec approved (approval " + sc.approvalId + ")", ":: TS-PENDING");
  const f = forms[0];
  if (!f || f.mode !== "form" || !f.message.includes("Command: echo TS-PENDING")) fail("no approval form with the command: " + JSON.stringify(f));

  nextAnswer = { action: "decline" };
  res = await client.callTool({ name: "exec", arguments: { command: "echo TS-DENIED" } });
  sc = res.structuredContent;
  if (sc.status !== "approval-pending") fail("exec did not return approval-pending: " + JSON.stringify(res));
  await notices("Exec denied (approval " + sc.approvalId + "): not approved; nothing ran: echo TS-DENIED");
  await client.close();
  console.log("OK");
  process.exit(0);
}

const { tools } = await client.listTools();
for (const t of tools) {
  if (!t.title || !t.annotations || !t.outputSchema) fail(`tool ${t.name} lacks title, annotations or outputSchema`);
}

// Wake in the next result.
let res = await client.callTool({ name: "exec", arguments: { command: "echo ts-done", background: true } });
const id = res.structuredContent.sessionId;
const want = `[bgexec] Exec completed (${id}, code 0) :: ts-done`;
let seen = 0;
for (let i = 0; i < 200 && seen === 0; i++) {
  res = await client.callTool({ name: "process", arguments: { action: "list" } });
  if (text(res).startsWith(want + "\n")) seen++;
}
if (seen !== 1) fail("no exit notice in the next results");
res = await client.callTool({ name: "process", arguments: { action: "list" } });
if (text(res).includes(want)) fail("the notice came twice");

// A long yield under a shorter client timeout: the server's cap (run
// with -max-call-ms 2000) returns first, with progress on the way.
let progress = 0;
res = await client.callTool(
  { name: "exec", arguments: { command: "sleep 8; echo late", yieldMs: 120000 } },
  undefined,
  { timeout: 5000, onprogress: () => progress++ },
);
if (res.structuredContent.status !== "running") fail("capped exec is not running: " + text(res));
if (!text(res).includes("limit of 2000 ms")) fail("capped exec does not say so: " + text(res));
if (progress < 1) fail("no progress notification");

// Protocol errors.
try {
  await client.callTool({ name: "shell", arguments: {} });
  fail("unknown tool accepted");
} catch (e) {
  if (e.code !== -32602) fail("unknown tool: code " + e.code);
}
try {
  await client.setLoggingLevel("loud");
  fail("level loud accepted");
} catch (e) {
  if (e.code !== -32602) fail("setLevel loud: code " + e.code);
}

// An empty poll is small.
res = await client.callTool({ name: "exec", arguments: { command: "seq 1 30000; exec sleep 300", background: true } });
const bg = res.structuredContent.sessionId;
await client.callTool({ name: "process", arguments: { action: "wait", sessionId: bg, pattern: "^30000$", timeout: 1000 } });
for (let i = 0; i < 50; i++) {
  res = await client.callTool({ name: "process", arguments: { action: "poll", sessionId: bg } });
  if (text(res).startsWith("(no new output)")) break;
}
const { text: _, ...statusFields } = res.structuredContent;
const size = JSON.stringify(statusFields).length;
if (size > 2048) fail("empty poll structuredContent has " + size + " bytes besides its text");
await client.callTool({ name: "process", arguments: { action: "kill", sessionId: bg } });

await client.close();
console.log("OK");
