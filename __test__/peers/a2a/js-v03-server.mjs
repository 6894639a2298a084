// Echo agent on the official @a2a-js/sdk 0.3.14 (A2A protocol v0.3), JSON-RPC binding.
//
//   node js-v03-server.mjs <port>
//
// Listens on 127.0.0.1:<port> (0 = any free port) and prints the base URL as the first stdout
// line. Uses the SDK's A2AExpressApp: card at <base>/.well-known/agent-card.json, JSON-RPC is
// POST <base>/ (the card's `url`).
// SDK location: $TOOLNEXUS_PEERS_DIR/js-v03 (default .peers/js-v03 at the repository root; scripts/peers.sh installs it).
import { randomUUID } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const sdkDir = join(join(process.env.TOOLNEXUS_PEERS_DIR ?? join(here, "..", "..", "..", ".peers"), "js-v03"), "node_modules");
const load = (p) => import(pathToFileURL(join(sdkDir, p)).href);

const { DefaultRequestHandler, InMemoryTaskStore } = await load("@a2a-js/sdk/dist/server/index.js");
const { A2AExpressApp } = await load("@a2a-js/sdk/dist/server/express/index.js");
const { default: express } = await load("express/index.js");

const port = Number(process.argv[2] ?? 0);

class EchoExecutor {
  async execute(ctx, bus) {
    const msg = ctx.userMessage;
    const text = (msg.parts ?? [])
      .filter((p) => p.kind === "text")
      .map((p) => p.text)
      .join("");
    const taskId = ctx.taskId;
    const contextId = ctx.contextId;
    const now = () => new Date().toISOString();
    if (!ctx.task) {
      bus.publish({
        kind: "task",
        id: taskId,
        contextId,
        status: { state: "submitted", timestamp: now() },
        history: [msg],
        metadata: msg.metadata,
      });
    }
    bus.publish({
      kind: "artifact-update",
      taskId,
      contextId,
      artifact: { artifactId: randomUUID(), name: "echo", parts: [{ kind: "text", text: `echo: ${text}` }] },
      append: false,
      lastChunk: true,
    });
    bus.publish({
      kind: "status-update",
      taskId,
      contextId,
      status: {
        state: "completed",
        message: {
          kind: "message",
          role: "agent",
          messageId: randomUUID(),
          parts: [{ kind: "text", text: `echo: ${text}` }],
          taskId,
          contextId,
        },
        timestamp: now(),
      },
      final: true,
    });
    bus.finished();
  }
  async cancelTask() {}
}

const app = express();
const server = app.listen(port, "127.0.0.1", () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: "js-v03-echo",
    description: "Echo agent (@a2a-js/sdk 0.3.14)",
    url: `${base}/`,
    preferredTransport: "JSONRPC",
    protocolVersion: "0.3.0",
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: true },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "echo", description: "Echoes the text back", tags: ["echo"] }],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoExecutor());
  new A2AExpressApp(handler).setupRoutes(app);
  console.log(base);
});

for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => server.close(() => process.exit(0)));
