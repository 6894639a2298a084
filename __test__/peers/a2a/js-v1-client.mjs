// Client on the official @a2a-js/sdk 1.3.0 (A2A protocol v1.0).
//
//   node js-v1-client.mjs <agent-base-url> [--compat] [--text hello] [--stream]
//
// Resolves the card with the SDK's own resolver (ClientFactory.createFromUrl ->
// DefaultAgentCardResolver, GET <base>/.well-known/agent-card.json), sends one message with
// client.sendMessage (blocking, the SDK default), then GetTask on the returned task (always once,
// and again until a terminal state), and prints one JSON line:
//   {"ok":bool,"text":string|null,"state":"completed"|...,"rawState":<as the SDK gives it>,"error"?:string}
// --compat passes legacyCompat:{enabled:true} to the card resolver and the JSON-RPC transport
// factory, so the SDK will talk v0.3 to a v0.3-only card. Without it the client is v1.0 only.
// SDK location: $TOOLNEXUS_PEERS_DIR/js-v1 (default .peers/js-v1 at the repository root; scripts/peers.sh installs it).
import { randomUUID } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const sdkDir = join(join(process.env.TOOLNEXUS_PEERS_DIR ?? join(here, "..", "..", "..", ".peers"), "js-v1"), "node_modules");
const load = (p) => import(pathToFileURL(join(sdkDir, p)).href);

const args = process.argv.slice(2);
const base = args.find((a) => !a.startsWith("--"));
const compat = args.includes("--compat");
// --stream: client.sendMessageStream instead, reading the events to the end (the task's
// artifacts and its last status come from them; no GetTask).
const streamed = args.includes("--stream");
const textArg = args.indexOf("--text");
const sendText = textArg >= 0 ? args[textArg + 1] : "hello";
const TIMEOUT_MS = Number(process.env.A2A_CLIENT_TIMEOUT_MS ?? 15000);

const out = (o) => {
  process.stdout.write(JSON.stringify(o) + "\n");
};

const TERMINAL = new Set([3, 4, 5, 7]); // COMPLETED FAILED CANCELED REJECTED
const INTERRUPTED = new Set([6, 8]); // INPUT_REQUIRED AUTH_REQUIRED

function partsText(parts) {
  return (parts ?? [])
    .filter((p) => p.content?.$case === "text")
    .map((p) => p.content.value)
    .join("");
}

function taskText(task) {
  const fromArtifacts = (task.artifacts ?? []).map((a) => partsText(a.parts)).filter(Boolean);
  if (fromArtifacts.length) return fromArtifacts.join("\n");
  if (task.status?.message) return partsText(task.status.message.parts) || null;
  const agentMsgs = (task.history ?? []).filter((m) => m.role === 2);
  return agentMsgs.length ? partsText(agentMsgs[agentMsgs.length - 1].parts) : null;
}

async function main() {
  if (!base) throw new Error("usage: js-v1-client.mjs <agent-base-url> [--compat]");
  const { taskStateToJSON } = await load("@a2a-js/sdk/dist/index.js");
  const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } =
    await load("@a2a-js/sdk/dist/client/index.js");
  const norm = (s) => {
    const j = taskStateToJSON(s); // e.g. TASK_STATE_INPUT_REQUIRED
    return j.startsWith("TASK_STATE_") ? j.slice(11).toLowerCase().replace(/_/g, "-") : j.toLowerCase();
  };
  const options = compat
    ? ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } }), new RestTransportFactory({ legacyCompat: { enabled: true } })],
        cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
      })
    : ClientFactoryOptions.default;
  const factory = new ClientFactory(options);
  const client = await factory.createFromUrl(base);
  const signal = AbortSignal.timeout(TIMEOUT_MS);
  const params = {
      tenant: "",
      message: {
        messageId: randomUUID(),
        contextId: "",
        taskId: "",
        role: 1, // ROLE_USER
        parts: [{ content: { $case: "text", value: sendText }, metadata: undefined, filename: "", mediaType: "" }],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    };
  if (streamed) {
    const kinds = [];
    const texts = [];
    // What each working status update's message says (a tool's progress and logs).
    const said = [];
    let state;
    for await (const ev of client.sendMessageStream(params, { signal })) {
      // A StreamResponse: { payload: { $case: "task" | "message" | "statusUpdate" | "artifactUpdate", value } }.
      const { $case: kind, value } = ev.payload ?? {};
      kinds.push(kind ?? "none");
      if (kind === "statusUpdate" && value.status?.message) said.push(partsText(value.status.message.parts));
      if (kind === "artifactUpdate") texts.push(partsText(value.artifact?.parts));
      if (kind === "statusUpdate" || kind === "task") state = value.status?.state ?? state;
      if (kind === "task" && value.artifacts?.length) texts.push(taskText(value));
    }
    return out({ ok: state === 3, text: texts.join("\n") || null, state: state === undefined ? null : norm(state), rawState: state === undefined ? null : taskStateToJSON(state), kinds, said });
  }
  const result = await client.sendMessage(
    params,
    { signal },
  );
  if ("messageId" in result) {
    // A direct Message answer, no task.
    return out({ ok: true, text: partsText(result.parts), state: null, rawState: null, kind: "message" });
  }
  let task = result;
  const deadline = Date.now() + TIMEOUT_MS;
  let gets = 0;
  do {
    task = await client.getTask({ tenant: "", id: task.id, historyLength: undefined }, { signal });
    gets++;
    if (TERMINAL.has(task.status?.state) || INTERRUPTED.has(task.status?.state)) break;
    await new Promise((r) => setTimeout(r, 200));
  } while (Date.now() < deadline);
  const state = task.status?.state;
  out({
    ok: state === 3,
    text: taskText(task),
    state: norm(state),
    rawState: taskStateToJSON(state),
    kind: "task",
    taskId: task.id,
    sendState: taskStateToJSON(result.status?.state),
    gets,
    protocolVersion: client.protocolVersion,
  });
}

main().catch((e) => {
  out({ ok: false, text: null, state: null, error: `${e?.name ?? "Error"}: ${e?.message ?? e}` });
  process.exitCode = 1;
});
