// The floor: the same tree written by hand with this package's plain client. The coordinator is
// one `client.run` whose `task` tool (a defineTool) runs the named worker as a nested
// `client.run`; the client executes the FANOUT `task` calls of one assistant message
// concurrently, so the workers run as one Promise.all, unbounded. Clients and toolkits are built
// once in setup(), as a program written this way would; no runtime, no handles, no gates.

import {
  API_KEY,
  COORDINATOR_MODEL,
  COORDINATOR_SOUL,
  LOOKUP_DESCRIPTION,
  LOOKUP_SCHEMA,
  PROMPT,
  WORKER_DOES,
  WORKER_MODEL,
  WORKER_SOUL,
  lookup,
} from "../scenario.mjs"

export async function setup({ baseURL, mod }) {
  const { createClient, createToolkit, defineTool } = mod
  const workerToolkit = await createToolkit({
    builtins: false,
    extraTools: [defineTool({ name: "lookup", description: LOOKUP_DESCRIPTION, inputSchema: LOOKUP_SCHEMA, run: lookup })],
  })
  const workerClient = createClient({ baseUrl: baseURL, style: "openai", model: WORKER_MODEL, apiKey: API_KEY, systemPrompt: WORKER_SOUL })
  const task = defineTool({
    name: "task",
    description: `Delegate a subtask to a worker. Available agents: worker: ${WORKER_DOES}`,
    inputSchema: {
      type: "object",
      properties: { agent: { type: "string" }, prompt: { type: "string" } },
      required: ["agent", "prompt"],
    },
    run: async (args) => {
      if (args.agent !== "worker") return { output: `unknown agent ${JSON.stringify(args.agent)}`, isError: true }
      const r = await workerClient.run(String(args.prompt), { toolkit: workerToolkit })
      return r.text
    },
  })
  const coordinatorToolkit = await createToolkit({ builtins: false, extraTools: [task] })
  const coordinatorClient = createClient({
    baseUrl: baseURL,
    style: "openai",
    model: COORDINATOR_MODEL,
    apiKey: API_KEY,
    systemPrompt: COORDINATOR_SOUL,
  })
  return {
    runTree: async () => {
      const r = await coordinatorClient.run(PROMPT, { toolkit: coordinatorToolkit })
      return { text: r.text, status: r.status }
    },
    close: async () => {
      await coordinatorToolkit.close?.()
      await workerToolkit.close?.()
    },
  }
}
