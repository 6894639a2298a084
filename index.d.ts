// Type declarations for the public API of the `toolnexus` package.
// Hand-maintained; must stay in step with the native implementation.

// ===========================================================================
// Core contract types
// ===========================================================================

/** Object-typed JSON Schema describing a tool's arguments. */
export type JSONSchema = {
  type: "object"
  properties?: Record<string, unknown>
  required?: string[]
  additionalProperties?: boolean
  [k: string]: unknown
}

/** Which kind of source a tool came from. */
export type ToolSource = "mcp" | "skill" | "builtin" | "native" | "http" | "a2a" | "custom"

/** Outcome of executing a tool. */
export interface ToolResult {
  output: string
  isError: boolean
  metadata?: Record<string, unknown>
  /**
   * MCP content blocks an MCP caller gets in place of `output` as one text block (toolnexus
   * addition; the model of this library's own loop still sees `output`).
   */
  content?: McpContentBlock[]
  /** The structured result an MCP caller gets, matching the tool's `outputSchema` (toolnexus addition). */
  structuredContent?: Record<string, unknown>
}

/** An MCP content block (text, image, audio, resource link, embedded resource). */
export type McpContentBlock =
  | { type: "text"; text: string; annotations?: Record<string, unknown>; _meta?: Record<string, unknown> }
  | { type: "image" | "audio"; data: string; mimeType: string; annotations?: Record<string, unknown>; _meta?: Record<string, unknown> }
  | { type: "resource_link"; uri: string; name: string; title?: string; description?: string; mimeType?: string; size?: number; annotations?: Record<string, unknown>; _meta?: Record<string, unknown> }
  | { type: "resource"; resource: McpResourceContents; annotations?: Record<string, unknown>; _meta?: Record<string, unknown> }

/** What a resource holds: text, or binary data in base64. */
export type McpResourceContents =
  | { uri: string; mimeType?: string; text: string; _meta?: Record<string, unknown> }
  | { uri: string; mimeType?: string; blob: string; _meta?: Record<string, unknown> }

/** An MCP log level, least severe first. */
export type McpLogLevel = "debug" | "info" | "notice" | "warning" | "error" | "critical" | "alert" | "emergency"

/** Per-call execution context handed to a tool. */
export interface ToolContext {
  signal?: AbortSignal
  timeout?: number
  /** Set only when the call is being retried after a suspension was resolved. */
  answer?: Answer
  /**
   * Report how far along the call is: an MCP caller that asked for progress gets a
   * `notifications/progress`; in a run of this library's own, the `duringTool` hook and
   * `onMetric` (`tool_progress`) get it, and when that run is a served A2A Task's (started with
   * the Task's signal), the Task's caller, as a `working` status update (toolnexus addition;
   * set when the tool is served over MCP, or runs in a loop with one of those listeners).
   */
  progress?: (progress: number, total?: number, message?: string) => void
  /**
   * Send a log entry to an MCP caller at or above the level it set with `logging/setLevel`; in
   * a run of this library's own, to the `duringTool` hook and `onMetric` (`tool_log`)
   * (toolnexus addition; set as `progress` is).
   */
  log?: (level: McpLogLevel, data: unknown, logger?: string) => void
  /**
   * Ask the MCP caller's model (`sampling/createMessage`; a message may be a plain text, the
   * user's; `maxTokens` defaults to 1000). Rejects when the caller does not offer sampling
   * (toolnexus addition; set when the tool is served over MCP).
   */
  sample?: (request: McpSamplingRequest) => Promise<McpSamplingResult>
  /**
   * End the event stream this call answers an MCP caller on; the caller reconnects
   * (`Last-Event-ID`) and gets the rest, the result included: MCP's SSE polling, for calls that
   * outlast a proxy's patience (toolnexus addition; set when the tool is served over MCP).
   */
  closeStream?: () => void
}

/** What `ctx.sample` asks an MCP caller's model. */
export interface McpSamplingRequest {
  messages: Array<string | { role?: "user" | "assistant"; content: string | McpContentBlock | McpContentBlock[] }>
  maxTokens?: number
  systemPrompt?: string
  temperature?: number
  stopSequences?: string[]
  modelPreferences?: Record<string, unknown>
  includeContext?: "none" | "thisServer" | "allServers"
  metadata?: Record<string, unknown>
}

/** The caller's model's answer to `ctx.sample`. */
export interface McpSamplingResult {
  role: "assistant" | "user"
  content: McpContentBlock | McpContentBlock[]
  model: string
  stopReason?: string
}

/** A suspension: something outside the call must happen before it can finish. */
export interface Request {
  id: string
  /** Open vocabulary, e.g. "authorization", "approval", "input". */
  kind: string
  prompt: string
  url?: string
  data?: Record<string, unknown>
  expiresAt?: string
  /**
   * On a run's `pending` when the client has a `resumeKey` (toolnexus-native): the library's seal
   * over what the run parked on, checked when the run is resumed in a process that holds no record
   * of it. Hand it back as it came.
   */
  seal?: string
}

/** The resolution of a suspension {@link Request}. */
export interface Answer {
  id: string
  ok: boolean
  data?: Record<string, unknown>
  /** Advisory explanation when `ok` is false. */
  reason?: "declined" | "cancelled" | "expired"
}

/** Build a suspending ToolResult (`metadata.pending` holds the Request). */
export declare function pending(request: Omit<Request, "id"> & { id?: string }): ToolResult

/** Shorthand for a `kind: "authorization"` suspension pointing at a login URL. */
export declare function authRequired(url: string, prompt?: string): ToolResult

/** The Request carried by a result, or undefined when it did not suspend. */
export declare function pendingOf(result: ToolResult): Request | undefined

/** The uniform tool shape every source produces. */
export interface Tool {
  name: string
  description: string
  inputSchema: JSONSchema
  source: ToolSource
  execute(args: Record<string, unknown>, ctx?: ToolContext): Promise<ToolResult>
  /** The JSON Schema of the tool's structured result, declared to MCP callers (toolnexus addition). */
  outputSchema?: JSONSchema
}

/** Connection state of one configured MCP server. */
export type McpStatus = "connected" | "disabled" | "failed"

/** Map every character outside `[a-zA-Z0-9_-]` to `_`. */
export declare const sanitize: (value: string) => string

// ===========================================================================
// Native tools
// ===========================================================================

/**
 * Standard Schema v1 (https://standardschema.dev): the small shared shape that zod 4, valibot,
 * arktype and other validation libraries give their schemas under the `~standard` key. Declared
 * here so that using it needs no extra package.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": StandardSchemaV1.Props<Input, Output>
}

export declare namespace StandardSchemaV1 {
  /** What a schema exposes under `~standard`. */
  interface Props<Input = unknown, Output = Input> {
    /** Always 1 for this version of the interface. */
    readonly version: 1
    /** The library that made the schema, e.g. "zod", "valibot", "arktype". */
    readonly vendor: string
    /** Checks a value; the answer may come back as a Promise. */
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>
    /** Type-only carrier of the accepted and the produced types. */
    readonly types?: Types<Input, Output> | undefined
  }
  /** The outcome of `validate`. */
  type Result<Output> = SuccessResult<Output> | FailureResult
  interface SuccessResult<Output> {
    /** The value after the schema's defaults and transforms. */
    readonly value: Output
    readonly issues?: undefined
  }
  interface FailureResult {
    readonly issues: ReadonlyArray<Issue>
  }
  /** One problem found in the value. */
  interface Issue {
    readonly message: string
    /** Where in the value: keys, or segments carrying a key. */
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined
  }
  interface PathSegment {
    readonly key: PropertyKey
  }
  interface Types<Input = unknown, Output = Input> {
    readonly input: Input
    readonly output: Output
  }
  /** The type a schema accepts. */
  type InferInput<S extends StandardSchemaV1> = NonNullable<S["~standard"]["types"]>["input"]
  /** The type a schema produces (what `run` receives). */
  type InferOutput<S extends StandardSchemaV1> = NonNullable<S["~standard"]["types"]>["output"]
}

/** What a tool's `inputSchema` may be given as: a JSON Schema, or a Standard Schema. */
export type ToolInputSchema = JSONSchema | StandardSchemaV1

/** The arguments `run` receives for a schema: a Standard Schema's output, else a plain record. */
export type ToolArgs<S> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : Record<string, unknown>

export interface DefineToolOptions<S extends ToolInputSchema = JSONSchema> {
  name: string
  description: string
  /**
   * A JSON Schema, or a Standard Schema (zod 4, valibot, arktype...). A Standard Schema is
   * shown to models as the JSON Schema its library makes of it (the tool's `inputSchema`), and
   * each call's arguments are validated by it before `run`, which gets the validated value.
   */
  inputSchema?: S
  source?: Tool["source"]
  /**
   * The schema (JSON Schema or Standard Schema) of the tool's structured result: an object `run`
   * returns is also the result's `structuredContent`, and MCP callers see it as the tool's
   * `outputSchema` (toolnexus addition).
   */
  outputSchema?: ToolInputSchema
  /** A string result becomes the output; a full ToolResult is passed through. */
  run: (args: ToolArgs<S>, ctx?: ToolContext) => unknown | Promise<unknown>
}

/** Turn a plain function into a {@link Tool}. */
export declare function defineTool<S extends ToolInputSchema = JSONSchema>(opts: DefineToolOptions<S>): Tool

/** Decorator factory marking a method or function as a tool. */
export declare function tool(
  description: string,
  opts?: { name?: string; inputSchema?: ToolInputSchema },
): (value: any, context: any) => any

/** Gather the tools marked with {@link tool} on an instance or an object of functions. */
export declare function collectTools(obj: object): Tool[]

// ===========================================================================
// MCP source
// ===========================================================================

/** A server started as a child process and spoken to over stdio. */
export interface LocalServer {
  type?: "local"
  /** The program and its arguments. */
  command: string[]
  /** Added to the inherited environment (`env` is accepted as an alias). */
  environment?: Record<string, string>
  env?: Record<string, string>
  cwd?: string
  enabled?: boolean
  disabled?: boolean
  /** Milliseconds for each connect / list step and each call (default 30000). */
  timeout?: number
  /** Which of the server's tools to expose, keyed by their names on the server. */
  tools?: Record<string, boolean>
}

/** A server reached over streamable HTTP (or the older HTTP+SSE transport). */
export interface RemoteServer {
  type?: "remote"
  url: string
  /** `${NAME}` in a value is replaced from the environment. */
  headers?: Record<string, string>
  /**
   * Signing in when the server asks for OAuth (401/403 with a `Bearer` challenge), unless an
   * `Authorization` header is configured. By default a person signs in: through `waitFor` (a
   * Request of kind `"authorization"` whose `url` is to be opened; answer
   * `{ ok: true, data: { url } }` with the URL the browser was sent back to), or, with no
   * `waitFor`, by the tool call parking on that Request. `false` turns it off (`mcpToken`
   * included).
   */
  oauth?: boolean | McpOAuth
  enabled?: boolean
  disabled?: boolean
  timeout?: number
  tools?: Record<string, boolean>
}

/** `mcpToken`: a remote MCP server's token, from you. */
export type McpTokenHook = (server: { server: string; url: string; challenge?: string }) => string | undefined | null | Promise<string | undefined | null>

/** How toolnexus signs in to a remote MCP server. `${NAME}` in a value is replaced from the environment. */
export interface McpOAuth {
  /** `"authorization_code"` (the default: a person signs in), `"client_credentials"` or `"cross_app"`. */
  grant?: "authorization_code" | "client_credentials" | "cross_app"
  /** A client registered with the authorization server beforehand (else a client metadata document or dynamic registration). */
  clientId?: string
  clientSecret?: string
  /** An https URL of this client's metadata document, used where the authorization server supports them. */
  clientMetadataUrl?: string
  /** The name dynamic registration gives (default "toolnexus"). */
  clientName?: string
  /** Where the browser is sent back to (default "http://127.0.0.1/callback"). */
  redirectUri?: string
  /** Scopes to ask for besides those the server names. */
  scopes?: string | string[]
  /** `client_credentials` with `private_key_jwt`: a PKCS#8 PEM key. */
  privateKey?: string
  signingAlgorithm?: "ES256"
  /** Cross-app access: an enterprise IdP's ID token, exchanged for the server's token. */
  crossApp?: {
    idpTokenEndpoint: string
    idpIssuer: string
    idpClientId: string
    idpClientSecret?: string
    idToken: string
  }
}

export type ServerConfig = LocalServer | RemoteServer
export type McpConfig = Record<string, ServerConfig>

/** The servers' tools, each server's status, and the connections behind them. */
export interface McpSource {
  tools: Tool[]
  status: Record<string, McpStatus>
  close(): Promise<void>
}

/** A tool as a server lists it (its own name, no server prefix). */
export interface ToolInfo {
  name: string
  description: string
  inputSchema: JSONSchema
}

/** What a list-only pass found. */
export interface McpInventory {
  tools: Record<string, ToolInfo[]>
  status: Record<string, McpStatus>
}

/** An MCP `elicitation/create` request from a server. */
export interface ElicitRequest {
  method: "elicitation/create"
  params: {
    mode?: "form" | "url"
    message: string
    requestedSchema?: Record<string, unknown>
    url?: string
    elicitationId?: string
    [k: string]: unknown
  }
}

/** The client's reply to an elicitation. */
export interface ElicitResult {
  action: "accept" | "decline" | "cancel"
  content?: Record<string, unknown>
  [k: string]: unknown
}

/** Read a config from a path or take a parsed one, and return the map of servers. */
export declare function parseMcpConfig(input: string | object): McpConfig

/** Replace `${NAME}` placeholders in header values from the environment. */
export declare function expandEnvHeaders(headers?: Record<string, string>): Record<string, string> | undefined

/** Connect every enabled server and expose its tools as `server_tool`. */
export declare function loadMcp(
  input: string | object,
  opts?: {
    waitFor?: (request: Request) => Promise<Answer>
    signal?: AbortSignal
    /** Where remote servers' sign-ins are kept (see {@link ToolkitOptions.store}). */
    store?: "memory" | StoreUrl | SqliteStore | PostgresStore | RedisStore | ConversationStore | TaskStore | string
    /** Your own tokens for remote servers (see {@link ToolkitOptions.mcpToken}). */
    mcpToken?: McpTokenHook
  },
): Promise<McpSource>

/** Connect every enabled server, list its tools, and disconnect. */
export declare function listMcpTools(input: string | object, opts?: { signal?: AbortSignal }): Promise<McpInventory>

/** An elicitation request as a suspension {@link Request}. */
export declare function elicitationToRequest(params: ElicitRequest["params"]): Request

/** An {@link Answer} as the elicitation reply. */
export declare function answerToElicitResult(answer: Answer): ElicitResult

// ===========================================================================
// Provider adapters
// ===========================================================================

export declare function toOpenAI(tools: Tool[]): {
  type: "function"
  function: { name: string; description: string; parameters: JSONSchema }
}[]

export declare function toAnthropic(tools: Tool[]): {
  name: string
  description: string
  input_schema: JSONSchema
}[]

export declare function toGemini(tools: Tool[]): {
  functionDeclarations: { name: string; description: string; parameters: JSONSchema }[]
}[]

// ===========================================================================
// Types referenced by ToolkitOptions / Toolkit
// ===========================================================================

/** A skill given as in-memory data instead of a SKILL.md on disk. */
export interface SkillDef {
  name: string
  description?: string
  content: string
  /** Logical resource names listed when the skill is invoked. */
  resources?: string[]
  /** Logical base; `skill://<name>/` when omitted. */
  base?: string
}

/** Toggle (and per-tool filter) for the built-in tools. */
export type BuiltinsConfig =
  | boolean
  | { enabled?: boolean; disabled?: boolean; tools?: Record<string, boolean> }

/**
 * Whether the built-in source is on: `undefined` ⇒ on; a boolean is the switch;
 * `disabled: true` wins, else `enabled: false` turns it off.
 */
export declare function builtinsEnabled(cfg: BuiltinsConfig | undefined): boolean

/**
 * The active built-in tools for a config: none when the source is off, else all ten minus
 * those the `tools` map sets to `false` (unknown names are ignored).
 */
export declare function selectBuiltins(cfg: BuiltinsConfig | undefined): Tool[]

/**
 * All ten built-in tools (`source: "builtin"`), fresh, in a fixed order: bash, read, write,
 * edit, grep, glob, webfetch, question, apply_patch, todowrite.
 */
export declare function createBuiltinTools(): Tool[]

/** A remote A2A agent, addressed by its Agent Card URL. */
export interface Agent {
  /** Where the Agent Card lives. */
  card: string
  /** Header values of the form `${ENV_VAR}` are expanded when a call is made. */
  headers?: Record<string, string>
  /** Total polling budget, in milliseconds. */
  timeout?: number
  /** Delay between task polls, in milliseconds. */
  pollEvery?: number
  /**
   * Origins (or URLs) besides the card's own that may receive `headers`. An endpoint the card
   * names on any other origin is called without them. (toolnexus-native; not in the TypeScript library.)
   */
  trustedOrigins?: string[]
}

export type A2ATaskState = "submitted" | "working" | "completed" | "failed" | "canceled" | string

export interface A2APart {
  kind: string
  text?: string
  [k: string]: unknown
}

export interface A2AMessage {
  role: string
  messageId?: string
  parts?: A2APart[]
  [k: string]: unknown
}

export interface A2AArtifact {
  parts?: A2APart[]
  [k: string]: unknown
}

export interface A2ATaskStatus {
  state: A2ATaskState
  message?: A2AMessage
  [k: string]: unknown
}

export interface A2ATask {
  id: string
  /** Conversation grouping key supplied by the peer. */
  contextId?: string
  status: A2ATaskStatus
  artifacts?: A2AArtifact[]
  history?: A2AMessage[]
  [k: string]: unknown
}

/** A skill an Agent Card advertises. */
export interface A2ASkill {
  id?: string
  name?: string
  description?: string
  tags?: string[]
  examples?: string[]
  [k: string]: unknown
}

/** What a remote agent publishes at `/.well-known/agent-card.json`. */
export interface AgentCard {
  name: string
  description?: string
  version?: string
  protocolVersion?: string
  capabilities?: { streaming?: boolean; pushNotifications?: boolean; [k: string]: unknown }
  defaultInputModes?: string[]
  defaultOutputModes?: string[]
  skills?: A2ASkill[]
  /** The agent's JSON-RPC endpoint. */
  url?: string
  [k: string]: unknown
}

/** One entry of a config file's `agents` block. */
export interface AgentConfig {
  card: string
  headers?: Record<string, string>
  timeout?: number
  pollEvery?: number
  /** Origins besides the card's own that may receive `headers`. */
  trustedOrigins?: string[]
  enabled?: boolean
  disabled?: boolean
}

/** A config file's `agents` block: entry id → its settings (the id is only a label). */
export type AgentsConfig = Record<string, AgentConfig>

/** An {@link Agent} descriptor from its fields; nothing is fetched until it is resolved. */
export declare function agent(opts: Agent): Agent

/** Fetch the agent's card and make one tool (`source: "a2a"`) per advertised skill. */
export declare function agentTools(ag: Agent): Promise<Tool[]>

/**
 * The enabled entries of an `agents` block as descriptors, in order: `disabled: true` wins,
 * then `enabled: false`; entries without a string `card` are skipped.
 */
export declare function parseAgentsConfig(block: AgentsConfig | undefined): Agent[]

/** Persistence backend for tasks served over A2A. */
export interface TaskStore {
  get(id: string): Promise<A2ATask | undefined>
  save(task: A2ATask): Promise<void>
}

export interface A2AProvider {
  organization: string
  url: string
}

/** Inbound A2A profile: what the served Agent Card advertises and where tasks are kept. */
export interface A2AConfig {
  name?: string
  description?: string
  version?: string
  provider?: A2AProvider
  /** Restrict the advertised skills to these ids/names. */
  skills?: string[]
  /** "memory", "file:<dir>", a {@link StoreUrl}, or a custom store. */
  store?: TaskStore | "memory" | StoreUrl | string
  /**
   * Advertise streaming in the served card (`capabilities.streaming: true`), so A2A SDK clients
   * use `message/stream` / `SendStreamingMessage`; both are served either way. (toolnexus-native)
   */
  streaming?: boolean
}

/** Reported when a served task reaches a terminal state. */
export interface OnTaskEvent {
  id: string
  skill?: string
  task: A2ATask
  result?: RunResult
  state: A2ATaskState
}

export type OnTask = (ev: OnTaskEvent) => void | Promise<void>

/** A running server started by `toolkit.serve`. */
export interface ServeHandle {
  /** Base URL the server listens on. */
  url: string
  stop(): Promise<void>
  /** Same as `stop()`. */
  close(): Promise<void>
  /**
   * Tell the MCP clients subscribed to resource `uri` that it changed
   * (`notifications/resources/updated`, on the event stream each opened with GET); how many
   * streams were told (toolnexus addition).
   */
  notifyResourceUpdated(uri: string): number
}

/** Inbound MCP profile: expose the toolkit as an MCP server. */
export interface MCPServeConfig {
  /** Server name reported during initialize. */
  name?: string
  /** Server version reported during initialize. */
  version?: string
  /** Only expose these tool names. */
  tools?: string[]
  /** Prompts the server offers (`prompts/list`, `prompts/get`; toolnexus addition). */
  prompts?: McpPromptDef[]
  /** Resources at fixed URIs (`resources/list`, `resources/read`, subscriptions; toolnexus addition). */
  resources?: McpResourceDef[]
  /** Resources whose URIs follow a template such as `notes://{id}` (toolnexus addition). */
  resourceTemplates?: McpResourceTemplateDef[]
  /**
   * `toolkit.serve`: the toolkit's skills as prompts (arguments from the frontmatter's
   * comma-separated `arguments`) and their files as `skill://<skill>/<path>` resources; on unless
   * `false` (toolnexus addition).
   */
  skills?: boolean
}

/** A served prompt's argument. */
export interface McpPromptArgument {
  name: string
  title?: string
  description?: string
  required?: boolean
}

/** A message of a prompt: its text (a user message), or a role and a text or content block. */
export type McpPromptMessage = string | { role?: "user" | "assistant"; content: string | McpContentBlock }

/** Candidate values for an argument being typed (at most 100 are sent), or the MCP completion itself. */
export type McpCompleter = (
  value: string,
) => string[] | { values: string[]; total?: number; hasMore?: boolean } | Promise<string[] | { values: string[]; total?: number; hasMore?: boolean }>

/** A prompt served over MCP. */
export interface McpPromptDef {
  name: string
  title?: string
  description?: string
  arguments?: McpPromptArgument[]
  /** The prompt's messages for these arguments. */
  get: (
    args: Record<string, string>,
  ) =>
    | string
    | McpPromptMessage[]
    | { description?: string; messages: McpPromptMessage[] }
    | Promise<string | McpPromptMessage[] | { description?: string; messages: McpPromptMessage[] }>
  /** Completers by argument name (`completion/complete`). */
  complete?: Record<string, McpCompleter>
}

/** What reading a resource answers: a text, a Buffer (binary), `{ text }` / `{ blob }` (base64), a list of them, or `{ contents }`. */
export type McpReadResult =
  | string
  | Uint8Array
  | { text: string; mimeType?: string; uri?: string }
  | { blob: string; mimeType?: string; uri?: string }
  | Array<string | Uint8Array | { text: string; mimeType?: string; uri?: string } | { blob: string; mimeType?: string; uri?: string }>
  | { contents: McpResourceContents[] }

/** A resource served at a fixed URI. */
export interface McpResourceDef {
  uri: string
  name: string
  title?: string
  description?: string
  mimeType?: string
  size?: number
  /** Its contents (`params` is empty for a fixed URI). */
  read: (req: { uri: string; params: Record<string, string> }) => McpReadResult | Promise<McpReadResult>
}

/** Resources served through a URI template (RFC 6570 `{name}` and `{+name}` expressions). */
export interface McpResourceTemplateDef {
  uriTemplate: string
  name: string
  title?: string
  description?: string
  mimeType?: string
  /** The contents at `uri`; `params` holds what the template's expressions matched. */
  read: (req: { uri: string; params: Record<string, string> }) => McpReadResult | Promise<McpReadResult>
  /** Completers by variable name (`completion/complete` with a `ref/resource`). */
  complete?: Record<string, McpCompleter>
}

/** Reported for each inbound MCP `tools/call`. */
export interface OnCallEvent {
  name: string
  source: ToolSource
  ms: number
  isError: boolean
}

export type OnCall = (ev: OnCallEvent) => void | Promise<void>

/** A message transport of the MCP SDK (`InMemoryTransport`, `StdioServerTransport`, ...). */
export interface MCPTransport {
  start(): Promise<void>
  send(message: any, options?: any): Promise<void>
  close(): Promise<void>
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: any, extra?: any) => void
}

/** What `buildMcpServer` returns: the MCP SDK `Server`'s connect surface. */
export interface MCPServer {
  /** Serve over `transport` until it closes. */
  connect(transport: MCPTransport): Promise<void>
  /** Close the connected transport. */
  close(): Promise<void>
  /** The connected transport, if any. */
  readonly transport: MCPTransport | undefined
  /** Tell the connected client that resource `uri` changed, if it subscribed to it (toolnexus addition). */
  notifyResourceUpdated(uri: string): boolean
  onclose?: () => void
  onerror?: (error: Error) => void
}

/** The tools the profile exposes: all of them, or those `cfg.tools` names (unknown names ignored). */
export declare function exposedMcpTools(tools: Tool[], cfg?: MCPServeConfig): Tool[]

/** An MCP server of `tools`: `tools/list` advertises them, `tools/call` runs them. */
export declare function buildMcpServer(tools: Tool[], cfg?: MCPServeConfig, onCall?: OnCall): MCPServer

/** Guards of the served HTTP endpoint (additions of this package; all opt-in but the body cap). */
export interface ServeSecurityOptions {
  /** Bearer token required on JSON-RPC and `/mcp` requests: the token, or `{ token }`. */
  auth?: string | { token: string }
  /** Origins `/mcp` and JSON-RPC POSTs accept besides loopback ones and the server's own (`"*"`: any); a request without `Origin` (a program, not a browser) is always accepted. */
  allowedOrigins?: string[]
  /** Largest request body accepted, in bytes (default 4 MiB); beyond it the answer is 413. */
  maxBodyBytes?: number
}

/** `toolkit.serve`'s options. */
export interface ServeOptions extends ServeSecurityOptions {
  /** Runs each served task (`client.ask` with the A2A contextId, else `client.run`). */
  client?: Client
  a2a?: A2AConfig
  /** Any return value is ignored (a listener such as `(ev) => events.push(ev)` fits). */
  onTask?: OnTask | ((ev: OnTaskEvent) => unknown)
  mcp?: MCPServeConfig
  onCall?: OnCall | ((ev: OnCallEvent) => unknown)
  /** Told the server's `[toolnexus] …` warnings instead of `console.warn` (toolnexus-native);
   * absent ⇒ the served toolkit's `logger`, else `console.warn`. */
  logger?: { warn(message: string): void }
  /** A server span per request (continuing the caller's W3C trace context), with each served
   * Task's run inside it; as `ClientOptions.telemetry` (toolnexus-native). */
  telemetry?: boolean | TelemetryOptions
}

/** `startA2AServer`'s options. */
export interface StartServerOptions extends ServeSecurityOptions {
  /** `host:port` (port 0 ⇒ ephemeral). */
  addr: string
  /** Mounts the Agent Card and the JSON-RPC endpoint; absent ⇒ no A2A routes. */
  a2a?: A2AConfig
  /** The skills the card advertises. */
  skills: SkillInfo[]
  /** Runs one served task; `contextId` is the peer's conversation key. */
  /** The third argument's `signal` aborts when a caller cancels the Task (toolnexus-native). */
  runTask: (text: string, contextId?: string, extra?: { signal: AbortSignal }) => Promise<RunResult>
  /**
   * Takes a Task parked for input (`input-required`, its Request in `metadata.pending`) up
   * again when a message continues it (`message.taskId`) with the Answer in a data part
   * (toolnexus-native; `toolkit.serve` uses `client.askWithAnswer`). Without it such a message
   * is refused.
   */
  resumeTask?: (contextId: string, pending: Request, answer: Answer, extra: { signal: AbortSignal }) => Promise<RunResult>
  /** Any return value is ignored (a listener such as `(ev) => events.push(ev)` fits). */
  onTask?: OnTask | ((ev: OnTaskEvent) => unknown)
  /** Mounts a streamable-HTTP MCP server at `/mcp`; absent ⇒ no MCP route. */
  mcp?: MCPServeConfig
  /** The tools the MCP profile exposes. */
  mcpTools?: Tool[]
  onCall?: OnCall | ((ev: OnCallEvent) => unknown)
  /** Told the server's `[toolnexus] …` warnings instead of `console.warn` (toolnexus-native). */
  logger?: { warn(message: string): void }
  /** A server span per request (continuing the caller's W3C trace context); `runTask` runs
   * inside it, so a traced client's run is its child (toolnexus-native). */
  telemetry?: boolean | TelemetryOptions
}

/** Tasks kept for the life of the process (the default store). */
export declare class InMemoryTaskStore implements TaskStore {
  /**
   * @param options.maxEntries how many Tasks to keep (default 1,000): past it the least recently
   * used finished Task is let go; a running one (submitted, working, input-required,
   * auth-required) never is.
   */
  constructor(options?: { maxEntries?: number })
  get(id: string): Promise<A2ATask | undefined>
  save(task: A2ATask): Promise<void>
}

/** One JSON file per task under `dir` (created if missing), written atomically. */
export declare class FileTaskStore implements TaskStore {
  constructor(dir: string)
  get(id: string): Promise<A2ATask | undefined>
  save(task: A2ATask): Promise<void>
}

/**
 * A durable engine, named by URL: `sqlite:<path>` (one file, created when missing),
 * `postgres://…` / `postgresql://…`, `redis://…` / `rediss://…`. Every process that names the same
 * URL shares its conversations and Tasks. A save never overwrites what another process saved
 * since this one read it: it rejects with `code: "ESTORECONFLICT"`. An engine that cannot be
 * reached rejects with `code: "ESTOREUNAVAILABLE"`; no message holds the URL's password.
 */
export type StoreUrl = `sqlite:${string}` | `postgres://${string}` | `postgresql://${string}` | `redis://${string}` | `rediss://${string}`

/**
 * A durable engine's store, both a {@link ConversationStore} and a {@link TaskStore}: pass it as
 * `createClient`'s `store`, an `AgentRuntime`'s `store` or `serve`'s `a2a.store`. Running Tasks a
 * server saves there hold a lease (30 s, `TOOLNEXUS_TASK_LEASE_MS`), renewed while their server
 * lives; a Task whose server died is read back `failed` once its lease runs out.
 */
export interface EngineStore extends TaskStore {
  /** The store's URL, its password hidden. */
  readonly url: string
  /** A conversation's messages by id; else the Task of that id; `undefined` for neither. */
  get(id: string): Promise<any>
  /** Keep a conversation (`save(id, messages)`) or a Task (`save(task)`). */
  save(id: string, messages: unknown[]): Promise<void>
  save(task: A2ATask): Promise<void>
  /** Delete a conversation and the records of what its runs parked on (toolnexus-native): whether there was one. */
  delete(id: string): Promise<boolean>
}

/** State in one SQLite file (WAL, crash-safe, no server). */
export declare class SqliteStore {
  /** @param path a file path, or a `sqlite:<path>` URL */
  constructor(path: string)
}
export interface SqliteStore extends EngineStore {}

/** State on PostgreSQL (a pool of 8 connections; TLS when the URL asks, as in `sslmode=require`). */
export declare class PostgresStore {
  constructor(url: `postgres://${string}` | `postgresql://${string}` | string)
}
export interface PostgresStore extends EngineStore {}

/** State on Redis. */
export declare class RedisStore {
  constructor(url: `redis://${string}` | `rediss://${string}` | string)
}
export interface RedisStore extends EngineStore {}

/**
 * `undefined` | `"memory"` ⇒ in memory, `"file:<dir>"` ⇒ a file store, a {@link StoreUrl} ⇒ that
 * engine's Tasks, an object ⇒ itself.
 */
export declare function resolveStore(store?: TaskStore | "memory" | StoreUrl | string): TaskStore

/** The Agent Card for an A2A profile, its skills (filtered by `cfg.skills`) and endpoint `url`. */
export declare function buildAgentCard(cfg: A2AConfig, skills: SkillInfo[], url: string): AgentCard

/** Start the HTTP server behind `toolkit.serve` with your own `runTask`. */
export declare function startA2AServer(opts: StartServerOptions): Promise<ServeHandle>

// ===========================================================================
// Skills
// ===========================================================================

/** The `skill` tool's description: when and how the model should load a skill. */
export declare const SKILL_TOOL_DESCRIPTION = "Load a specialized skill when the task at hand matches one of the skills listed in the system prompt.\n\nUse this tool to inject the skill's instructions and resources into current conversation. The output may contain detailed workflow guidance as well as references to scripts, files, etc in the same directory as the skill.\n\nThe skill name must match one of the skills listed in your system prompt."

/** The two lines that open `prompt()` when at least one skill has a description. */
export declare const SKILLS_PROMPT_PREAMBLE: string

/** One discovered skill. */
export interface SkillInfo {
  name: string
  description?: string
  /** The SKILL.md path for on-disk skills (relative when its root was); the logical base for data skills. */
  location: string
  /** The body after the frontmatter. */
  content: string
  /** "fs" for a SKILL.md on disk, "logical" for a skill supplied as data. */
  origin?: "fs" | "logical"
  /** Data skills only: the resource names listed when the skill is loaded. */
  resources?: string[]
  /** Data skills only: the logical base, e.g. `skill://name/`. */
  base?: string
}

/** Why a candidate did not become a skill. */
export type SkillSkipReason = "missing-name" | "malformed-frontmatter" | "duplicate-name" | "unreadable"

export interface SkillSkip {
  location: string
  reason: SkillSkipReason
}

/** What `listSkills` returns: every skill found (unfiltered) and every rejected candidate. */
export interface SkillInventory {
  skills: SkillInfo[]
  skipped: SkillSkip[]
}

export interface LoadSkillsOptions {
  /** Roots searched for `**\/SKILL.md`. */
  dirs?: string | string[]
  /** Skills supplied as data; they come after every directory's. */
  skills?: SkillDef[]
  /** Name → on/off. Any `true` ⇒ only those; only `false` entries ⇒ drop those. */
  filter?: Record<string, boolean>
  /** Sibling files listed per skill: 0 ⇒ 10, n > 0 ⇒ n, -1 ⇒ no `<skill_files>` block. */
  sampleLimit?: number
}

/** Loaded skills, the one `skill` tool over them, and the system-prompt catalog. */
export interface SkillSource {
  skills: Record<string, SkillInfo>
  tool: Tool
  /** The markdown catalog of described skills, sorted by name. */
  prompt(): string
}

/** Discover and validate skills without building a tool (the filter is not applied). */
export declare function listSkills(input: string | string[] | LoadSkillsOptions): SkillInventory

/** Discover skills and build the `skill` tool that loads one on demand. */
export declare function loadSkills(input: string | string[] | LoadSkillsOptions): SkillSource

// ===========================================================================
// HTTP tools
// ===========================================================================

export interface HttpToolOptions {
  name: string
  description: string
  method: string
  /** `{name}` placeholders are filled from (and consume) the matching arguments. */
  url: string
  /** Values expand `${ENV_VAR}` from the environment when a call is made. */
  headers?: Record<string, string>
  /** Argument names sent in the querystring instead of the body. */
  query?: string[]
  /** How leftover arguments are encoded on a request with a body. */
  body?: "json" | "form" | "raw"
  /** A JSON Schema, or a Standard Schema: then arguments are validated by it before the request is made of its output. */
  inputSchema?: ToolInputSchema
  /** Milliseconds (default 30000); a call's `ctx.timeout` wins. */
  timeout?: number
  resultMode?: "text" | "json" | "status+text"
}

/** Declare one HTTP endpoint as a {@link Tool} (`source: "http"`). */
export declare function httpTool(opts: HttpToolOptions): Tool

// ===========================================================================
// Toolkit
// ===========================================================================

export interface ToolkitOptions {
  mcpConfig?: string | object
  skillsDir?: string | string[]
  /** Skills passed directly as data. */
  skills?: SkillDef[]
  /** Called once while the toolkit is built to supply more data skills. */
  skillProvider?: () => SkillDef[] | Promise<SkillDef[]>
  /** Allow/deny map for skills, keyed by skill name. */
  skillsFilter?: Record<string, boolean>
  /** Final tool names to remove, whatever source produced them. */
  disableTools?: string[]
  /** Skill names to remove from the catalog (explicit skillsFilter entries take precedence). */
  disableSkills?: string[]
  /** Cap on sampled sibling files: 0 = default, positive = cap, -1 = none listed. */
  skillSampleLimit?: number
  extraTools?: Tool[]
  /** Built-in tools; enabled unless switched off. */
  builtins?: BuiltinsConfig
  /** Remote A2A agents whose skills become tools. */
  agents?: Agent[]
  /** Resolver for input requested by MCP servers during a call. */
  waitFor?: (request: Request) => Promise<Answer>
  /** Aborts MCP loading. */
  signal?: AbortSignal
  /**
   * Where remote MCP servers' sign-ins are kept (toolnexus-native): client registrations,
   * tokens, and logins a call parked on. Memory by default; a {@link StoreUrl} or a durable store
   * shares them with every process on it, so a login handed out in one finishes in another.
   * Anything else (a store of your own, shared with a client's options) is warned about and
   * ignored, as the reference ignored the option.
   */
  store?: "memory" | StoreUrl | SqliteStore | PostgresStore | RedisStore | ConversationStore | TaskStore | string
  /**
   * Your own tokens for remote MCP servers (toolnexus-native): asked before a server's first
   * request, and again when it answers 401/403 (with its `WWW-Authenticate` challenge). A
   * string is sent as the bearer token; anything else lets the sign-in (or the failure) take its
   * course. A hook that throws is warned about and counts as no token.
   */
  mcpToken?: McpTokenHook
  /** Told this toolkit's `[toolnexus] …` warnings (its assembly, its tools' calls, its MCP
   * servers, its serving) instead of `console.warn` (toolnexus-native). A `warn` that throws
   * or rejects is ignored and the text goes to `console.warn`. */
  logger?: { warn(message: string): void }
}

export declare class Toolkit {
  private constructor()
  static create(opts: ToolkitOptions): Promise<Toolkit>
  tools(): Tool[]
  get(name: string): Tool | undefined
  /** Add tools at runtime; an existing name is kept. */
  register(...tools: Tool[]): this
  /** Resolve a remote agent (a descriptor, or a card URL plus options) and register its tools. */
  addAgent(agentOrCardUrl: Agent | string, opts?: Omit<Agent, "card">): Promise<this>
  execute(name: string, args: Record<string, unknown>, ctx?: ToolContext): Promise<ToolResult>
  /** Skill catalog (markdown) to append to a system prompt. */
  skillsPrompt(): string
  mcpStatus(): Record<string, McpStatus>
  /**
   * Serve this toolkit over HTTP: the A2A profile (`a2a`, or the config's `a2a` block) and/or
   * the MCP profile (`mcp`, or the config's `mcpServer` block). No profile ⇒ every request 404s.
   */
  serve(addr: string, opts: ServeOptions): Promise<ServeHandle>
  toOpenAI(): {
    type: "function"
    function: { name: string; description: string; parameters: JSONSchema }
  }[]
  toAnthropic(): {
    name: string
    description: string
    input_schema: JSONSchema
  }[]
  toGemini(): {
    functionDeclarations: { name: string; description: string; parameters: JSONSchema }[]
  }[]
  close(): Promise<void>
}

export declare function createToolkit(opts: ToolkitOptions): Promise<Toolkit>

// ===========================================================================
// Single-turn translation
// ===========================================================================

/** An OpenAI-style chat request, passed through as-is. */
export interface TranslateRequest {
  /** OpenAI `messages`, verbatim. */
  messages: any[]
  /** OpenAI `tools`, verbatim; declared only, never run. */
  tools?: any[]
  /** A toolkit whose tools are declared (not executed); placed before `tools`. */
  toolkit?: Toolkit
  /** OpenAI `tool_choice`, verbatim. */
  toolChoice?: any
  /** Replaces the system prompt. */
  system?: string
  /** Replaces the default max tokens. */
  maxTokens?: number
  signal?: AbortSignal
}

/** A tool call requested by the model, OpenAI-shaped. */
export interface TranslatedToolCall {
  id: string
  name: string
  /** JSON-encoded arguments string. */
  arguments: string
}

/** The result of one translated provider call. */
export interface TranslateResult {
  text: string
  toolCalls: TranslatedToolCall[]
  finishReason: "stop" | "tool_calls" | "length" | "content_filter"
  usage: Usage
  model: string
  /** Provider response as decoded. */
  raw?: any
}

export declare function finishReasonFor(
  hasToolCalls: boolean,
  providerStop?: string,
): TranslateResult["finishReason"]
export declare function contentText(content: unknown): string
export declare function argsObject(args: unknown): Record<string, unknown>
export declare function argsString(args: unknown): string
export declare function toolCallsOf(m: any): TranslatedToolCall[]
export declare function openAIMessagesToAnthropic(messages: any[]): { messages: any[]; system: string }
export declare function openAIToolsToAnthropic(tools: any[] | undefined): any[]
export declare function openAIToolChoiceToAnthropic(choice: unknown): any
export declare function hasSystemMessage(messages: any[]): boolean

// ===========================================================================
// Client
// ===========================================================================

export type ClientStyle = "openai" | "anthropic"

export interface ClientOptions {
  baseUrl: string
  style: ClientStyle
  model: string
  apiKey?: string
  headers?: Record<string, string>
  systemPrompt?: string
  maxTurns?: number
  hooks?: Hooks
  /** Retry count for transient LLM failures. */
  retries?: number
  /** Initial backoff in milliseconds. */
  retryBaseMs?: number
  /** Deadline for a whole run, in milliseconds. */
  timeoutMs?: number
  /**
   * Where `ask` keeps conversations; in memory when omitted. A {@link StoreUrl} names a durable
   * engine (reached on the first `ask`), shared by every process that names it.
   */
  store?: ConversationStore | StoreUrl
  /** Receives each metric event as it happens. */
  onMetric?: (ev: MetricEvent) => void
  /** Resolves tool suspensions; without it a run stops with status "pending". */
  waitFor?: (request: Request) => Promise<Answer>
  /** Extra top-level keys merged into every LLM request body. */
  requestParams?: Record<string, unknown>
  /** Last-chance rewrite of the request body; a falsy return keeps it unchanged. */
  bodyTransform?: (body: Record<string, any>) => Record<string, any> | undefined | void
  /** Transport used for LLM requests. */
  fetch?: typeof fetch
  /** Decide whether a failed LLM call is retried. */
  onError?: (info: ErrorInfo) => ErrorTier
  /** Told the `[toolnexus] …` warnings of this client's runs instead of `console.warn`
   * (toolnexus-native); a toolkit's own `logger` wins for its tools. A `warn` that throws or
   * rejects is ignored and the text goes to `console.warn`. */
  logger?: { warn(message: string): void }
  /**
   * OpenTelemetry spans for each run (`invoke_agent`), model call (`chat <model>`) and tool call
   * (`execute_tool <name>`), with the GenAI semantic conventions' attributes; outgoing model,
   * A2A and HTTP-tool requests carry the W3C trace context. Needs `@opentelemetry/api` (an
   * optional peer) and a registered SDK; off (nothing loaded) by default.
   */
  telemetry?: boolean | TelemetryOptions
  /**
   * Other models to try, in order, when an LLM call fails after its retries with a 429, a 5xx,
   * a 404 (model not found), a 408 or no response at all (toolnexus-native). Each entry overrides
   * the primary's connection fields; a 400, 401 or 403 does not fall back. Every call of a run
   * starts again at the primary.
   */
  fallback?: FallbackEntry[]
  /**
   * A secret (16 characters or more) that seals each parked Request this client hands out
   * (toolnexus-native; default: the `TOOLNEXUS_RESUME_KEY` environment variable). With it,
   * `runWithAnswer` in a process that holds no record of the park (no durable `store`) can still
   * tell a parking of its own making from an edited or invented one. Give every process that
   * parks or resumes the same key.
   */
  resumeKey?: string
  /**
   * How long the record of a parked Request is kept (toolnexus-native; default 30 days): from
   * when it parked or its `expiresAt`, whichever is later, or from when it was answered. Past it,
   * a resume of that Request is refused as unknown.
   */
  parkRetentionMs?: number
}

/** One `fallback` model: the fields it changes from the primary's connection (toolnexus-native). */
export interface FallbackEntry {
  model?: string
  baseUrl?: string
  /** Defaults to the primary's key. */
  apiKey?: string
  /** The entry's wire style; the transcript is rewritten for it and back. */
  style?: ClientStyle
  /** Replaces the primary's extra headers. */
  headers?: Record<string, string>
}

/** Where `telemetry` spans go: the global tracer provider's `toolnexus` tracer unless one is given. */
export interface TelemetryOptions {
  /** An OpenTelemetry `Tracer` to start spans with. */
  tracer?: { startSpan(name: string, options?: any, context?: any): any }
  /** An OpenTelemetry `TracerProvider` to take the `toolnexus` tracer from. */
  tracerProvider?: { getTracer(name: string, version?: string): any }
}

export type ErrorTier = "retry" | "fail"

export interface ErrorInfo {
  /** Transport error, when no HTTP response was received. */
  error?: unknown
  /** HTTP status of a failed response. */
  status?: number
  /** 0 for the first attempt. */
  attempt: number
  /** Whether the default policy considers this failure retryable. */
  retryable: boolean
  /** The model that failed; set only when the client has `fallback` entries (toolnexus-native). */
  model?: string
  /** Which `fallback` entry failed (absent for the primary). */
  fallback?: number
}

export type MetricEvent =
  | {
      event: "llm"
      model: string
      status: "ok" | "error"
      ms: number
      promptTokens: number
      completionTokens: number
      /** How many HTTP attempts the call took, retries included; present only when it was retried (toolnexus-native). */
      attempts?: number
      /** Which `fallback` entry made this call (absent for the primary; toolnexus-native). */
      fallback?: number
    }
  | { event: "tool"; tool: string; source: string; isError: boolean; ms: number; pending?: boolean }
  /** A tool's `ctx.progress(...)` while it runs (toolnexus-native). */
  | { event: "tool_progress"; tool: string; source: string; progress: number; total?: number; message?: string }
  /** A tool's `ctx.log(...)` while it runs (toolnexus-native). */
  | { event: "tool_log"; tool: string; source: string; level: McpLogLevel; data: unknown; logger?: string }
  | { event: "run"; model: string; turns: number; toolCalls: number; totalTokens: number; ms: number; error?: string }

/** Storage for `ask` transcripts. */
export interface ConversationStore {
  get(id: string): Promise<any[] | undefined>
  save(id: string, messages: any[]): Promise<void>
  /** Called by `client.deleteConversation(id)` (toolnexus-native); resolving `false` means there was none. */
  delete?(id: string): Promise<boolean | void>
}

/** Process-lifetime conversation storage (the default). */
export declare class InMemoryConversationStore implements ConversationStore {
  /** @param options.maxEntries how many conversations to keep (default 1,000): past it the least recently used is let go. */
  constructor(options?: { maxEntries?: number })
  get(id: string): Promise<any[] | undefined>
  save(id: string, messages: any[]): Promise<void>
  /** Let a conversation go (toolnexus-native): whether there was one. */
  delete(id: string): Promise<boolean>
}

/** Callbacks around model and tool calls. */
export interface Hooks {
  beforeLLM?(ev: {
    messages: any[]
    tools: any[]
    model: string
    turn: number
  }): void | { messages?: any[]; tools?: any[] } | Promise<void | { messages?: any[]; tools?: any[] }>
  afterLLM?(ev: { response: any; model: string; turn: number }): void | Promise<void>
  beforeTool?(ev: {
    name: string
    args: Record<string, unknown>
    id?: string
    turn: number
  }):
    | void
    | { args?: Record<string, unknown>; result?: ToolResult }
    | Promise<void | { args?: Record<string, unknown>; result?: ToolResult }>
  afterTool?(ev: {
    name: string
    args: Record<string, unknown>
    result: ToolResult
    id?: string
    turn: number
  }): void | { result?: ToolResult } | Promise<void | { result?: ToolResult }>
  /**
   * What a tool reports while it runs (`ctx.progress`, `ctx.log`), in order, before its result
   * goes on; the answer is not read, a throw fails the run once the tool has finished
   * (toolnexus-native).
   */
  duringTool?(ev: ToolReport): void | Promise<void>
}

/** A report a tool makes while it runs, as the `duringTool` hook sees it (toolnexus-native). */
export type ToolReport = { name: string; id?: string; turn: number } & (
  | { type: "progress"; progress: number; total?: number; message?: string }
  | { type: "log"; level: McpLogLevel; data: unknown; logger?: string }
)

export interface ToolCallRecord {
  name: string
  args: Record<string, unknown>
  output: string
  isError: boolean
  metadata?: Record<string, unknown>
}

export interface Usage {
  promptTokens: number
  completionTokens: number
  totalTokens: number
}

export interface RunResult<O = unknown> {
  text: string
  messages: any[]
  toolCalls: ToolCallRecord[]
  toolCallCount: number
  turns: number
  usage: Usage
  model: string
  status: "done" | "pending" | "incomplete"
  /** Set when status is "pending". */
  pending?: Request
  /** Set when status is "incomplete": which limit ended the run. */
  limit?: string
  /**
   * The checked answer of a run given `output` (toolnexus-native): the schema library's output
   * (transforms applied) for a Standard Schema, the parsed JSON for a JSON Schema. `text` holds
   * the answer as the model gave it.
   */
  output?: O
}

/** What `output` takes: a Standard Schema (zod 4, valibot, arktype, ...) or a JSON Schema. */
export type OutputSchema = StandardSchemaV1 | JSONSchema

/** The type of `result.output` for an `output` schema: the Standard Schema's output type. */
export type OutputOf<S> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : unknown

/** The type of the JSON the model writes for an `output` schema: the Standard Schema's input type. */
export type InputOf<S> = S extends StandardSchemaV1 ? StandardSchemaV1.InferInput<S> : unknown

/**
 * A streamed answer's object so far, as the model has written it: nothing in it is checked yet
 * (that happens once the answer is complete), so each field may be missing and each value may
 * have any JSON type. The keys follow the schema's input side to guide reading; narrow a value
 * before using it (`typeof v === "number"`). The checked answer is the `done` event's `output`.
 */
export type UncheckedPartial<T> = T extends readonly (infer U)[]
  ? UncheckedPartial<U>[]
  : T extends object
    ? { [K in keyof T]?: UncheckedPartial<T[K]> }
    : unknown

/** An object whose fields may each be missing so far. */
export type DeepPartial<T> = T extends readonly (infer U)[]
  ? DeepPartial<U>[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T

/**
 * Structured output (toolnexus-native) for `run`, `ask` and `stream`: the run ends with an
 * answer checked against `output`.
 */
export interface OutputOptions<S extends OutputSchema = JSONSchema> {
  /** The answer's schema. */
  output?: S
  /**
   * How the schema reaches the model. `"auto"` (default): OpenAI-style `response_format`,
   * a final tool on Anthropic's wire; `"native"`: the wire's own structured output
   * (`response_format` / `output_format`); `"tool"`: a final tool the model must call;
   * `"prompt"`: an instruction with the schema. Under `"auto"`, an endpoint that refuses
   * `response_format` (an error naming it) is asked with the final tool instead, and one that
   * then refuses `tool_choice` with the instruction.
   */
  outputMode?: "auto" | "native" | "tool" | "prompt"
  /** How many answers that do not match go back to the model with their issues (default 1, at most 10). */
  outputRetries?: number
  /** The final tool's name (default "final_answer"). */
  outputName?: string
}

/**
 * Why a resume was refused (`runWithAnswer`, `askWithAnswer`, `agents.AgentRuntime.resume`, a
 * served Task's continuation): an `Error` with one of these codes, and nothing was run or used up
 * unless the code says the Request already was (toolnexus-native).
 * - `EUNKNOWNREQUEST`: nothing in this scope parked on that Request id (an invented id, an Answer
 *   for another Request, a conversation that went on without it or was deleted).
 * - `EREQUESTMISMATCH`: the `pending` or the history handed back is not what the library recorded
 *   at the park (a field of the Request, the parked call's tool, arguments or id, or the turn it
 *   belongs to was changed); the message names what.
 * - `EREQUESTEXPIRED`: the Request, as recorded, is past its `expiresAt`.
 * - `ETOOLMISSING`: the parked call's tool is not in the toolkit given.
 * - `ESTORECONFLICT`: the Request was already answered (here or in another process).
 */
export type ResumeErrorCode = "EUNKNOWNREQUEST" | "EREQUESTMISMATCH" | "EREQUESTEXPIRED" | "ETOOLMISSING" | "ESTORECONFLICT"

/** The error a refused resume rejects with (an answer that is not `{ id, ok: boolean }` is a `TypeError` instead). */
export interface ResumeError extends Error {
  code: ResumeErrorCode
}

/**
 * The error a run rejects with when its answer still does not match `output` (an `Error`
 * with these fields; toolnexus-native).
 */
export interface OutputError extends Error {
  code: "EOUTPUT"
  /** What did not match, each with its path (`items[0].name`; empty at the root). */
  issues: { path: string; message: string }[]
  /** The last answer as the model gave it. */
  text: string
}

/** `O`: the checked answer's type (`result.output`); `I`: the JSON the model writes (a partial's keys). */
export type StreamEvent<O = unknown, I = O> =
  | { type: "text"; delta: string }
  | { type: "tool_call"; id: string; name: string; args: Record<string, unknown> }
  | { type: "tool_result"; id: string; name: string; output: string; isError: boolean }
  | { type: "usage"; usage: Usage }
  | { type: "pending"; request: Request }
  /** The answer's object so far, unchecked, each time it grows (a run with `output`; toolnexus-native). */
  | { type: "output"; partial: UncheckedPartial<I> }
  /**
   * An answer that did not match `output` went back to the model (toolnexus-native): which
   * attempt it was (from 1), its issues and its text as `OutputError` would carry them. The text
   * deltas and partial objects before it were that attempt's; the ones after it start afresh.
   */
  | { type: "output_retry"; attempt: number; issues: { path: string; message: string }[]; text: string }
  | { type: "done"; result: RunResult<O> }

export declare class Client {
  constructor(opts: ClientOptions)
  /** The store used by `ask`. */
  conversationStore(): ConversationStore
  /** Prometheus text exposition of the metrics collected so far. */
  metrics(): string
  run<S extends OutputSchema = JSONSchema>(
    prompt: string,
    ctx: { toolkit: Toolkit; signal?: AbortSignal; history?: any[] } & OutputOptions<S>,
  ): Promise<RunResult<OutputOf<S>>>
  /** One provider call, OpenAI shapes in and out; no tools are executed. */
  translate(req: TranslateRequest): Promise<TranslateResult>
  /** A result's tool calls as an OpenAI `tool_calls` array. */
  static toolCallsJSON(res: TranslateResult): any[]
  ask<S extends OutputSchema = JSONSchema>(
    prompt: string,
    ctx: { toolkit: Toolkit; id?: string; on_text?: (delta: string) => void; signal?: AbortSignal } & OutputOptions<S>,
  ): Promise<RunResult<OutputOf<S>>>
  conversation(ctx: { toolkit: Toolkit; signal?: AbortSignal }): Conversation
  stream<S extends OutputSchema = JSONSchema>(
    prompt: string,
    ctx: { toolkit: Toolkit; id?: string; signal?: AbortSignal } & OutputOptions<S>,
  ): AsyncGenerator<StreamEvent<OutputOf<S>, InputOf<S>>, void, unknown>
  /**
   * SPEC §10 durable resume (an addition): the run that parked with `pending` (its RunResult's
   * `pending`; `history` is that result's `messages`) goes on with `answer`, in this process, or
   * in another through a durable `store` or a shared `resumeKey`. What goes on is what the library
   * recorded at the park: `pending` and `history` must be what the run handed out. The Answer
   * must echo `pending.id` and reaches the parked call alone; the turn's other parked calls run
   * again and park on their own Requests; no new user turn. Refused, nothing run
   * ({@link ResumeError}): `EUNKNOWNREQUEST`, `EREQUESTMISMATCH`, `EREQUESTEXPIRED`,
   * `ETOOLMISSING`, `ESTORECONFLICT` (already answered); an answer that is not an object with a
   * boolean `ok` is a `TypeError`.
   */
  runWithAnswer<S extends OutputSchema = JSONSchema>(
    toolkit: Toolkit,
    history: any[],
    pending: Request,
    answer: Answer,
    options?: { signal?: AbortSignal } & OutputOptions<S>,
  ): Promise<RunResult<OutputOf<S>>>
  /**
   * `runWithAnswer` over the conversation the store keeps under `conversationId`, saved as it goes.
   * Refused (nothing run) as `runWithAnswer` is; a Request of another conversation is unknown here.
   */
  askWithAnswer<S extends OutputSchema = JSONSchema>(
    toolkit: Toolkit,
    conversationId: string,
    pending: Request,
    answer: Answer,
    options?: { signal?: AbortSignal } & OutputOptions<S>,
  ): Promise<RunResult<OutputOf<S>>>
  /**
   * Delete a conversation from the store with what its runs parked on, so none of its parked
   * Requests can be answered any more (toolnexus-native; a store object of your own needs a
   * `delete(id)` method). Resolves whether the store had it.
   */
  deleteConversation(conversationId: string): Promise<boolean>
}

export declare function createClient(opts: ClientOptions): Client

/** A tool call returned by an in-process model. */
export interface InProcessToolCall {
  id?: string
  name: string
  /** Structured value or an already-encoded JSON string. */
  arguments?: unknown
}

/** What an in-process model receives for one call. */
export interface InProcessRequest {
  messages: any[]
  tools?: any[]
  model: string
  /** The full assembled request body. */
  body: Record<string, any>
}

/** One assistant turn produced by an in-process model. */
export interface InProcessResponse {
  content?: string
  toolCalls?: InProcessToolCall[]
  usage?: { promptTokens?: number; completionTokens?: number; totalTokens?: number }
}

export type InProcessOptions = Omit<ClientOptions, "baseUrl" | "apiKey" | "style" | "fetch"> & {
  /** The model itself. */
  generate: (request: InProcessRequest) => InProcessResponse | Promise<InProcessResponse>
}

/** A client whose model is a function in this process. */
export declare function createInProcessClient(opts: InProcessOptions): Client

/** Multi-turn conversation that keeps its transcript between sends. */
export declare class Conversation {
  /** The transcript so far. */
  messages: any[]
  constructor(client: Client, toolkit: Toolkit, signal?: AbortSignal)
  send(prompt: string): Promise<RunResult>
  reset(): void
}

/** The agent layer: context compaction (SPEC §7F) and personas (SPEC §7E). */
export declare namespace agents {
  /** A chat message of a transcript; fields compaction does not read are kept as they are. */
  interface Message {
    role: string
    content?: unknown
    tool_calls?: unknown[]
    tool_call_id?: string
    [key: string]: unknown
  }

  /** Options for {@link compactor}. */
  interface CompactorOptions {
    /** Compact only when the estimate is above this; at or below, the hook changes nothing. */
    maxTokens: number
    /** Tokens of recent transcript to keep at least. Default `maxTokens / 2`. */
    keepTail?: number
    /** Summarizes the older messages; may call a model. */
    summarize: (older: Message[]) => Promise<string> | string
    /** Token estimate; default {@link estimateTokens}. */
    countTokens?: (messages: Message[]) => number
    /** Add a reminder to save durable facts with the `memory` tool before summarizing. */
    flushToMemory?: boolean
  }

  /** What a `beforeLLM` hook receives. */
  interface BeforeLLMEvent {
    messages: Message[]
    tools: unknown[]
    model: string
    turn: number
  }

  /** A `beforeLLM` hook that compacts the transcript once it is over `maxTokens`. */
  function compactor(opts: CompactorOptions): (ev: BeforeLLMEvent) => Promise<{ messages: Message[] } | undefined>

  /** `ceil(chars / 4)` of each message's JSON, summed. */
  function estimateTokens(messages: Message[]): number

  /** The present bootstrap files of `dir`, in {@link BOOTSTRAP_ORDER}, as one system prompt. */
  function composeSoul(dir: string): { soul: string; found: string[] }

  /** The file-backed `memory` tool over `dir` (`MEMORY.md` and `USER.md`). */
  function memoryTool(dir: string): Tool

  /**
   * A policy check on one tool call, consulted before it runs. `"allow"` (or nothing) lets it
   * through; any other string refuses it, with that string as the reason.
   */
  type Guardrail = (ev: { name: string; args: Record<string, unknown>; id?: string; turn: number }) => string | undefined | void

  /** A completion verifier's judgement. */
  interface Verdict {
    ok: boolean
    reason?: string
  }

  /** The completion gate: a run is `done` only once `verify` says so. */
  interface Completion {
    /** Judges a run; its `toolCalls` are those of every attempt so far. */
    verify: (result: RunResult) => Verdict | Promise<Verdict>
    /** Required: how many runs the gate may spend, at least 1. */
    maxAttempts: number
  }

  /** Per-call options of {@link Loop.run}. */
  interface LoopRunOptions {
    /** The model for this call only; the agent's otherwise. */
    model?: string
  }

  /** What {@link Loop.run} reports. */
  interface Outcome {
    text: string
    status: "done" | "incomplete" | "pending" | "error"
    /** Why the run stopped, whenever `status` is not `done`. */
    stoppedBy?: string
    attempts: number
    turns: number
    result?: RunResult
  }

  /**
   * `guardrails` compiled into one `beforeTool` where the first refusal wins, ahead of the
   * `beforeTool` of `hooks`. No guardrails: `hooks` itself.
   */
  function guardedHooks(guardrails: Guardrail[] | undefined, hooks: Hooks | undefined): Hooks | undefined

  /** The built-in verifier: the latest `todowrite` list must have every item completed. */
  function allTodosDone(result: RunResult): Verdict

  /** Runs `prompt` through `ask` behind the completion gate; without one, a plain `ask`. */
  function runGated(
    ask: (prompt: string) => Promise<RunResult>,
    prompt: string,
    completion: Completion | undefined,
  ): Promise<RunResult>

  /** One agent at work. Only `run` acts; `status` and `turns` are observed. */
  class Loop {
    constructor(
      agent: Agent,
      options: ClientOptions,
      toolkit: Toolkit,
    )
    get status(): string
    /** Model round trips spent by this loop, over all its runs. */
    get turns(): number
    run(prompt: string, opts?: LoopRunOptions): Promise<Outcome>
  }

  const BOOTSTRAP_ORDER: readonly ["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md"]
  const MAX_FILE_BYTES: number
  const TRUNCATION_NOTICE = "\n[truncated: exceeds 2 MB bootstrap cap]"
  const HEARTBEAT_OK = "HEARTBEAT_OK"
  const HEARTBEAT_PROMPT: string
  /** Injectable time source: every runtime timer, timeout and deadline goes through it. */
  interface Clock {
    now(): number
    setTimeout(fn: () => void, ms: number): () => void
  }
  /** The real clock; its timers never hold the process open. */
  const systemClock: Clock

  /** Hierarchical caps, carved at spawn and enforced live against the ancestor chain. */
  interface Budget {
    maxTurns?: number
    maxTokens?: number
    maxToolCalls?: number
    maxWallMs?: number
    maxChildren?: number
    maxConcurrent?: number
    maxDepth?: number
  }
  type CloseReason = "closed" | "interrupted" | "budget" | "error"
  interface AgentDef {
    name: string
    does: string
    soul?: string
    model?: string
    tools?: Tool[]
    team?: string[]
    budget?: Budget
    waitFor?: (request: Request) => Promise<Answer>
    onSpawn?: (h: Handle) => void | Promise<void>
    onClose?: (h: Handle, reason: CloseReason) => void | Promise<void>
    hooks?: Hooks
    onMetric?: (ev: MetricEvent) => void
    completion?: { verify: (result: RunResult) => { ok: boolean; reason?: string } | Promise<{ ok: boolean; reason?: string }>; maxAttempts: number }
    /**
     * Each of the agent's turns ends with an answer checked against this schema (toolnexus-native;
     * see {@link OutputOptions}); the TaskResult's `output` holds it, as JSON.
     */
    output?: OutputSchema
    outputMode?: OutputOptions["outputMode"]
    outputRetries?: number
    outputName?: string
  }
  interface InboxItem {
    from: string
    channel: string
    text: string
  }
  type HandleState = "idle" | "running" | "suspended" | "closed"
  type TaskStatus = "done" | "pending" | "incomplete" | "interrupted" | "closed" | "timeout" | "error"
  interface TaskResult {
    text: string
    isError: boolean
    status: TaskStatus
    pending?: Request
    turns: number
    totalTokens: number
    /** The checked answer of an agent with `output` (toolnexus-native). */
    output?: unknown
  }
  interface VerbError {
    error: string
  }
  function isVerbError(x: unknown): x is VerbError
  interface HandleView {
    id: string
    state: HandleState
    tokens: number
    inbox: number
  }
  /** A live agent: a read-only view of its state in the runtime. */
  /** A handle's remaining budget pools (tokens and tool calls drained live, children). */
  interface Pools {
    tokens: number
    toolCalls: number
    children: number
  }
  /** The halted turn's exact input, replayed on resume. */
  interface Checkpoint {
    input: string
  }
  /** A child's wake deferred by its parent's `maxConcurrent`. */
  interface QueuedWake {
    h: Handle
    prompt?: string
  }
  /**
   * A live agent: every field reads the runtime's current state. (The reference's `waiters`
   * and `ready` internals are not exposed.)
   */
  class Handle {
    private constructor()
    readonly id: string
    readonly def: AgentDef
    readonly parent: Handle | null
    readonly depth: number
    readonly children: Handle[]
    readonly inbox: InboxItem[]
    state: HandleState
    readonly pool: Pools
    readonly eff: { maxTurns: number; maxConcurrent: number; maxDepth: number }
    readonly deadline?: number
    usageTotal: number
    toolCallsTotal: number
    turnsTotal: number
    pendingRequest?: Request
    lastResult?: TaskResult
    /** The in-flight turn's abort (aborting it interrupts the turn); `null` between turns. */
    abort: AbortController | null
    checkpoint?: Checkpoint
    drained: InboxItem[]
    wakeQueue: QueuedWake[]
    taskKey?: string
    runningChildren: number
    seq: number
  }
  interface RuntimeOptions {
    registry: Record<string, AgentDef>
    llm?: { baseUrl?: string; style?: ClientStyle; apiKey?: string; model?: string; fallback?: FallbackEntry[] }
    fetch?: typeof fetch
    clock?: Clock
    /**
     * The conversation store of every handle. A {@link StoreUrl} (or a {@link SqliteStore},
     * {@link PostgresStore}, {@link RedisStore}) also keeps the runtime's own state there, written
     * at every transition: a runtime opened later on the same store (another process, after a
     * crash or a deploy) starts from it — suspended handles wait for `resume`, a turn that was
     * running comes back `idle` with an `interrupted` result and its inbox items restored. Runtimes
     * of several processes may work on one store at once: their writes are merged per handle.
     * Opening reads the store before the constructor returns (and throws `ESTOREUNAVAILABLE` when
     * the engine cannot be reached).
     */
    store?: ConversationStore | StoreUrl
    /** On a durable store: the name this runtime's state is kept under (default `"agents"`). */
    runtimeId?: string
    inboxCap?: number
    maxConcurrentTurns?: number
    shutdownMs?: number
    hooks?: Hooks
    onMetric?: (ev: MetricEvent) => void
    /** Asked when a budget stops a running turn: `"stop"` (the default), `"extend"` (go on
     * past it for this call) or `"suspend"` (an approval request through §10). */
    onBudget?: (info: BudgetInfo) => "stop" | "extend" | "suspend" | Promise<"stop" | "extend" | "suspend">
    /** Told the runtime's `[toolnexus] …` warnings (its turns, its durable store) instead of
     * `console.warn` (toolnexus-native). */
    logger?: { warn(message: string): void }
    /** Each handle's turns as `invoke_agent <name>` spans, a spawned handle's under the `task`
     * call that spawned it, with the client's spans inside; as `ClientOptions.telemetry`
     * (toolnexus-native). */
    telemetry?: boolean | TelemetryOptions
  }
  interface BudgetInfo {
    handle: Handle
    id: string
    limit: "maxTokens" | "maxToolCalls" | "maxWallMs"
    tokens: number
    toolCalls: number
    turns: number
  }
  /** The §7D runtime: six host verbs over a tree of handles. */
  class AgentRuntime {
    constructor(opts: RuntimeOptions)
    readonly trace: string[]
    readonly root: Handle
    readonly store: ConversationStore
    readonly clock: Clock
    concurrentTurns: number
    maxObservedConcurrentTurns: number
    spawn(parent: Handle, defName: string, budget?: Budget): Handle | VerbError
    post(h: Handle, item: InboxItem): { ok: true } | { ok: false; error: string }
    wake(h: Handle, prompt?: string): { ok: true } | { ok: false; error: string }
    wait(h: Handle, opts?: { timeoutMs?: number; by?: Handle }): Promise<TaskResult>
    interrupt(h: Handle): void
    close(h: Handle, opts?: { force?: boolean; reason?: CloseReason }): Promise<void>
    list(h?: Handle, acc?: HandleView[]): HandleView[]
    inspect(h: Handle): HandleView & { turns: number; poolTokens: number; pending?: Request }
    resume(answer: Answer): Promise<void>
    /** One-shot run of the registered agent `name`: spawn, wake, wait, close (kept when pending). */
    runAgent(name: string, prompt: string): Promise<TaskResult>
  }
  interface AgentSpec {
    does: string
    uses?: { tools?: Tool[] }
    soul?: string
    soulFile?: string
    team?: Agent[]
    budget?: Budget
    model?: string
    waitFor?: (request: Request) => Promise<Answer>
    onSpawn?: AgentDef["onSpawn"]
    onClose?: AgentDef["onClose"]
    hooks?: Hooks
    onMetric?: (ev: MetricEvent) => void
    guardrails?: Array<(ev: { name: string; args: Record<string, unknown>; id?: string; turn: number }) => string | undefined | void>
    completion?: AgentDef["completion"]
  }
  type AgentRunOptions = Omit<RuntimeOptions, "registry">
  interface AgentRunResult extends TaskResult {
    runtime: AgentRuntime
  }
  class Agent {
    constructor(name: string, spec: AgentSpec)
    readonly name: string
    readonly spec: AgentSpec
    registry(acc?: Record<string, AgentDef>): Record<string, AgentDef>
    loop(options: ClientOptions, toolkit: Toolkit): Loop
    createRuntime(opts?: AgentRunOptions): AgentRuntime
    run(prompt: string, opts?: AgentRunOptions): Promise<AgentRunResult>
    asTool(opts?: AgentRunOptions): Tool
  }
  function agent(name: string, spec: AgentSpec): Agent
  function harness(spec: AgentSpec): AgentSpec
  interface FromDirOptions {
    does?: string
    name?: string
    model?: string
    tools?: Tool[]
    memory?: boolean
  }
  function fromDir(dir: string, opts?: FromDirOptions): Agent
  interface HeartbeatOptions {
    everyMs: number
    onBeat?: (text: string) => void
  }
  interface StartedAgent {
    runtime: AgentRuntime
    beats: string[]
    stop: () => Promise<void>
  }
  function startAgent(a: Agent, run: AgentRunOptions, hb: HeartbeatOptions): StartedAgent
}
