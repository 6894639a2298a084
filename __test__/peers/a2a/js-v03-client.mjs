// Client on the official @a2a-js/sdk 0.3.14 (A2A protocol v0.3).
//
//   node js-v03-client.mjs <agent-base-url> [--text hello] [--stream]
//
// Resolves the card with the SDK's own resolver (ClientFactory.createFromUrl ->
// DefaultAgentCardResolver, GET <base>/.well-known/agent-card.json), sends one message with
// client.sendMessage (blocking:true, the SDK default), then tasks/get on the returned task
// (always once, and again until a terminal state), and prints one JSON line:
//   {"ok":bool,"text":string|null,"state":"completed"|...,"rawState":<as on the wire>,"error"?:string}
// SDK location: $TOOLNEXUS_PEERS_DIR/js-v03 (default .peers/js-v03 at the repository root; scripts/peers.sh installs it).
import { randomUUID } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const sdkDir = join(join(process.env.TOOLNEXUS_PEERS_DIR ?? join(here, "..", "..", "..", ".peers"), "js-v03"), "node_modules");
const load = (p) => import(pathToFileURL(join(sdkDir, p)).href);

const args = process.argv.slice(2);
const base = args.find((a) => !a.startsWith("--"));
const textArg = args.indexOf("--text");
const sendText = textArg >= 0 ? args[textArg + 1] : "hello";
// --stream: client.sendMessageStream instead, reading the events to the end (no tasks/get).
const streamed = args.includes("--stream");
const TIMEOUT_MS = Number(process.env.A2A_CLIENT_TIMEOUT_MS ?? 15000);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const TERMINAL = new Set(["completed", "failed", "canceled", "rejected", "input-required", "auth-required"]);
const partsText = (parts) =>
  (parts ?? [])
    .filter((p) => p?.kind === "text")
    .map((p) => p.text)
    .join("");
function taskText(task) {
  const fromArtifacts = (task.artifacts ?? []).map((a) => partsText(a.parts)).filter(Boolean);
  if (fromArtifacts.length) return fromArtifacts.join("\n");
  if (task.status?.message) return partsText(task.status.message.parts) || null;
  const agentMsgs = (task.history ?? []).filter((m) => m.role === "agent");
  return agentMsgs.length ? partsText(agentMsgs[agentMsgs.length - 1].parts) : null;
}

async function main() {
  if (!base) throw new Error("usage: js-v03-client.mjs <agent-base-url>");
  const { ClientFactory } = await load("@a2a-js/sdk/dist/client/index.js");
  const client = await new ClientFactory().createFromUrl(base);
  const signal = AbortSignal.timeout(TIMEOUT_MS);
  if (streamed) {
    const kinds = [];
    const texts = [];
    // What each working status update's message says (a tool's progress and logs).
    const said = [];
    let state = null;
    const message = { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: sendText }] };
    for await (const ev of client.sendMessageStream({ message }, { signal })) {
      kinds.push(ev.kind);
      if (ev.kind === "status-update" && ev.status?.message) said.push(partsText(ev.status.message.parts));
      if (ev.kind === "artifact-update") texts.push(partsText(ev.artifact?.parts));
      if (ev.kind === "status-update" || ev.kind === "task") state = ev.status?.state ?? state;
    }
    return out({ ok: state === "completed", text: texts.join("\n") || null, state, rawState: state, kinds, said });
  }
  const result = await client.sendMessage(
    { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: sendText }] } },
    { signal },
  );
  if (result?.kind === "message") {
    return out({ ok: true, text: partsText(result.parts), state: null, rawState: null, kind: "message" });
  }
  if (result?.kind !== "task") {
    // The v0.3 SDK passes `result` through unchecked; say what came back.
    throw new Error(`unexpected message/send result: ${JSON.stringify(result)?.slice(0, 300)}`);
  }
  let task = result;
  const deadline = Date.now() + TIMEOUT_MS;
  let gets = 0;
  do {
    task = await client.getTask({ id: task.id }, { signal });
    gets++;
    if (TERMINAL.has(task?.status?.state)) break;
    await new Promise((r) => setTimeout(r, 200));
  } while (Date.now() < deadline);
  const state = task?.status?.state ?? null;
  out({ ok: state === "completed", text: taskText(task), state, rawState: state, kind: task?.kind, taskId: task?.id, sendState: result.status?.state, gets });
}

main().catch((e) => {
  out({ ok: false, text: null, state: null, error: `${e?.name ?? "Error"}: ${e?.message ?? e}` });
  process.exitCode = 1;
});
