// Echo agent on the official @a2a-js/sdk 1.3.0 (A2A protocol v1.0), JSON-RPC binding.
//
//   node js-v1-server.mjs <port> [--compat]
//
// Listens on 127.0.0.1:<port> (0 = any free port) and prints the base URL as the first stdout
// line. The card is at <base>/.well-known/agent-card.json, JSON-RPC is POST <base>/.
// --compat turns on the SDK's v0.3 compatibility layer (legacyCompat) on both the card route and
// the JSON-RPC route, and advertises a second JSONRPC interface with protocolVersion "0.3".
// SDK location: $TOOLNEXUS_PEERS_DIR/js-v1 (default .peers/js-v1 at the repository root; scripts/peers.sh installs it).
import { randomUUID } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const sdkDir = join(join(process.env.TOOLNEXUS_PEERS_DIR ?? join(here, "..", "..", "..", ".peers"), "js-v1"), "node_modules");
const load = (p) => import(pathToFileURL(join(sdkDir, p)).href);

const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = await load("@a2a-js/sdk/dist/server/index.js");
const { agentCardHandler, jsonRpcHandler, UserBuilder } = await load("@a2a-js/sdk/dist/server/express/index.js");
const { default: express } = await load("express/index.js");

const port = Number(process.argv[2] ?? 0);
const compat = process.argv.includes("--compat");

// Core (proto-ts) enum values, see dist/index.js taskStateFromJSON / roleFromJSON.
const TASK_STATE_SUBMITTED = 1;
const TASK_STATE_COMPLETED = 3;
const ROLE_AGENT = 2;

const textPart = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });

class EchoExecutor {
  async execute(ctx, bus) {
    const msg = ctx.userMessage;
    const text = (msg.parts ?? [])
      .filter((p) => p.content?.$case === "text")
      .map((p) => p.content.value)
      .join("");
    const taskId = ctx.taskId;
    const contextId = ctx.contextId;
    const now = () => new Date().toISOString();
    if (!ctx.task) {
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: { state: TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
          artifacts: [],
          history: [msg],
          metadata: undefined,
        }),
      );
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: randomUUID(),
          name: "echo",
          description: "",
          parts: [textPart(`echo: ${text}`)],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: {
          state: TASK_STATE_COMPLETED,
          message: {
            messageId: randomUUID(),
            contextId,
            taskId,
            role: ROLE_AGENT,
            parts: [textPart(`echo: ${text}`)],
            metadata: undefined,
            extensions: [],
            referenceTaskIds: [],
          },
          timestamp: now(),
        },
        metadata: undefined,
      }),
    );
  }
  async cancelTask() {}
}

const app = express();
const server = app.listen(port, "127.0.0.1", () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const interfaces = [{ url: `${base}/`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" }];
  if (compat) interfaces.push({ url: `${base}/`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "0.3" });
  const card = {
    name: "js-v1-echo",
    description: "Echo agent (@a2a-js/sdk 1.3.0)",
    supportedInterfaces: interfaces,
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [
      {
        id: "echo",
        name: "echo",
        description: "Echoes the text back",
        tags: ["echo"],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoExecutor());
  const legacyCompat = compat ? { enabled: true } : undefined;
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler, legacyCompat }));
  app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  console.log(base);
});

for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => server.close(() => process.exit(0)));
