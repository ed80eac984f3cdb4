import { type StreamResponse, type Task, TaskState } from "@a2a-js/sdk"
import { type Client, ClientFactory } from "@a2a-js/sdk/client"
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc"
import { decodeErrorInfo, decodeStatus, GRPC_STATUS_CODE, GRPC_STATUS_DETAILS_BIN } from "@a2a-js/sdk/errors/grpc"
import { InMemoryTaskStore } from "@a2a-js/sdk/server"
import { A2AService } from "@a2a-js/sdk/server/grpc"
import { BinaryWriter } from "@bufbuild/protobuf/wire"
import { describe, expect, it } from "@effect/vitest"
import * as Grpc from "@grpc/grpc-js"
import { Deferred, Effect, Exit, FastCheck, Fiber, Layer, Metric, Option, Scope, type Tracer } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"
import * as Observability from "../src/Observability.js"
import * as Part from "../src/Part.js"
import { runWithout } from "./fixtures/blocked.js"
import { selfSigned } from "./fixtures/selfSigned.js"
import { busListeners, captureLogs, eventually, takenPort, textOf, userMessage } from "./fixtures/serverAgents.js"

const card = { name: "grpc-test", description: "A2AServer over gRPC" }

/** An agent that ends as its message's text says. */
const endings: AgentExecutor.Agent<Error> = (request) => {
  const text = Part.textOf(request.message.parts)
  switch (text) {
    case "fail":
      return Effect.fail(new Error("secret: the database password is hunter2"))
    case "die":
      return Effect.die(new Error("secret: a defect at /srv/agent.ts:12"))
    case "reject":
      return Effect.succeed(AgentExecutor.Rejected({ reason: "out of scope" }))
    case "ask":
      return Effect.succeed(AgentExecutor.InputRequired({ question: "Which account?" }))
    case "wait":
      return Effect.never
    default:
      return Effect.zipRight(
        AgentExecutor.status("thinking"),
        Effect.succeed(AgentExecutor.completedText(`echo ${text}`))
      )
  }
}

const grpcClient = (server: { readonly url: string }): Effect.Effect<Client> =>
  Effect.promise(() => new ClientFactory({ transports: [new GrpcTransportFactory()] }).createFromUrl(server.url))

const sendText = (client: Client, text: string, returnImmediately = false, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    client.sendMessage({
      tenant: "",
      message: userMessage(text),
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
      metadata: {}
    }, { serviceParameters: headers })
  ).pipe(Effect.map((result) => result as Task))

interface RawAnswer {
  readonly code: number
  readonly details: string
  readonly metadata: Grpc.Metadata | undefined
}

const identity = (bytes: Buffer) => bytes

/** One call of raw bytes, as any gRPC peer may send them (unary, or server-streaming when `stream`); its status, whatever it is. */
const rawCall = (
  address: string,
  path: string,
  bytes: Uint8Array,
  metadata: Record<string, string> = { "a2a-version": "1.0" },
  stream = false
) =>
  Effect.acquireUseRelease(
    Effect.sync(() => new Grpc.Client(address, Grpc.credentials.createInsecure())),
    (client) =>
      Effect.async<RawAnswer>((resume) => {
        const sent = new Grpc.Metadata()
        for (const [key, value] of Object.entries(metadata)) sent.set(key, value)
        const ended = (error: Grpc.ServiceError | null) =>
          resume(Effect.succeed(
            error === null
              ? { code: GRPC_STATUS_CODE.OK, details: "", metadata: undefined }
              : { code: error.code, details: error.details, metadata: error.metadata }
          ))
        const options = { deadline: Date.now() + 10_000 }
        if (!stream) {
          return void client.makeUnaryRequest(path, identity, identity, Buffer.from(bytes), sent, options, ended)
        }
        const call = client.makeServerStreamRequest(path, identity, identity, Buffer.from(bytes), sent, options)
        call.on("data", () => {})
        call.on("error", ended)
        call.on("end", () => ended(null))
      }),
    (client) => Effect.sync(() => client.close())
  )

/** The ErrorInfo reason and the other detail types of an answer's `grpc-status-details-bin`. */
const detailsOf = (answer: RawAnswer) => {
  const bin = answer.metadata?.get(GRPC_STATUS_DETAILS_BIN)[0]
  if (bin === undefined) return undefined
  const status = decodeStatus(Buffer.from(bin as Buffer))
  const info = status.details.find((detail) => detail.typeUrl.endsWith("google.rpc.ErrorInfo"))
  return {
    code: status.code,
    message: status.message,
    reason: info === undefined ? undefined : decodeErrorInfo(info.value).reason,
    types: status.details.map((detail) => detail.typeUrl)
  }
}

const opaqueFailure = /^Agent execution failed\. \(error_id: [0-9a-f]{12}\)$/
const opaqueInternal = /^Internal error\. \(error_id: [0-9a-f]{12}\)$/

describe("A2AServer over gRPC", () => {
  it.scopedLive("serves on its own port, read from urls.GRPC and listed in the card", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: endings, card })
      expect(server.urls.GRPC).toMatch(/^127\.0\.0\.1:\d+$/)
      expect(server.urls.GRPC).not.toBe("127.0.0.1:0")
      expect(server.urls.JSONRPC).toBe(server.rpcUrl)
      expect(
        server.card.supportedInterfaces.filter((i) => i.protocolBinding === "GRPC").map((
          i
        ) => [i.url, i.protocolVersion])
      )
        .toEqual([[server.urls.GRPC, "1.0"], [server.urls.GRPC, "0.3"]])
      const proxied = yield* A2AServer.make({ agent: endings, card, grpc: { publicAddress: "agents.example.com:443" } })
      expect(proxied.urls.GRPC).toBe("agents.example.com:443")
      expect(proxied.card.supportedInterfaces.filter((i) => i.protocolBinding === "GRPC").map((i) => i.url))
        .toEqual(["agents.example.com:443", "agents.example.com:443"])
      const rpcOnly = yield* A2AServer.make({ agent: endings, card, transports: ["JSONRPC"] })
      expect(rpcOnly.urls.GRPC).toBeUndefined()
      expect(rpcOnly.card.supportedInterfaces.map((i) => i.protocolBinding)).toEqual(["JSONRPC", "JSONRPC"])
    }))

  it.live("makeRouter serves gRPC on its own port only when transports names it, and its scope closes that port", () =>
    Effect.gen(function*() {
      const unnamed = yield* Effect.scoped(
        A2AServer.makeRouter({ agent: endings, card, publicUrl: "http://127.0.0.1:1" })
      )
      expect(unnamed.urls.GRPC).toBeUndefined()
      const scope = yield* Scope.make()
      const router = yield* Scope.extend(
        A2AServer.makeRouter({
          agent: endings,
          card,
          publicUrl: "http://127.0.0.1:1",
          transports: ["JSONRPC", "GRPC"]
        }),
        scope
      )
      expect(router.card.supportedInterfaces.map((i) => i.protocolBinding)).toEqual([
        "JSONRPC",
        "JSONRPC",
        "GRPC",
        "GRPC"
      ])
      const bytes = A2AService.getTask.requestSerialize({ tenant: "", id: "x", historyLength: undefined })
      expect((yield* rawCall(router.urls.GRPC!, A2AService.getTask.path, bytes)).code).toBe(GRPC_STATUS_CODE.NOT_FOUND)
      yield* Scope.close(scope, Exit.void)
      expect((yield* rawCall(router.urls.GRPC!, A2AService.getTask.path, bytes)).code).toBe(
        GRPC_STATUS_CODE.UNAVAILABLE
      )
    }))

  it.scopedLive("a gRPC port that cannot be bound fails start-up with a ServeError naming the address", () =>
    Effect.gen(function*() {
      const port = yield* takenPort
      const error = yield* Effect.flip(A2AServer.make({ agent: endings, card, grpc: { port } }))
      expect(error._tag).toBe("ServeError")
      expect(error.message).toBe(`address 127.0.0.1:${port} is in use`)
    }))

  it.scopedLive("the SDK's gRPC client gets every ending: COMPLETED, FAILED with the opaque text only, REJECTED, INPUT_REQUIRED, CANCELED", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const server = yield* A2AServer.make({ agent: endings, card }).pipe(Effect.provide(logs.layer))
      const client = yield* grpcClient(server)

      const completed = yield* sendText(client, "hello")
      expect(completed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textOf(completed)).toBe("echo hello")

      for (const text of ["fail", "die"]) {
        const failed = yield* sendText(client, text)
        expect(failed.status?.state).toBe(TaskState.TASK_STATE_FAILED)
        expect(textOf(failed)).toMatch(opaqueFailure)
        expect(JSON.stringify(failed)).not.toContain("secret")
      }

      expect((yield* sendText(client, "reject")).status?.state).toBe(TaskState.TASK_STATE_REJECTED)
      const asked = yield* sendText(client, "ask")
      expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      expect(textOf(asked)).toBe("Which account?")

      const waiting = yield* sendText(client, "wait", true)
      const canceled = yield* Effect.promise(() => client.cancelTask({ tenant: "", id: waiting.id, metadata: {} }))
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      const read = yield* Effect.promise(() => client.getTask({ tenant: "", id: waiting.id, historyLength: undefined }))
      expect(read.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    }))

  it.scopedLive("one run per task: a message to a task whose run is in progress is FAILED_PRECONDITION with an ErrorInfo", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: endings, card, shutdownTimeout: "100 millis" }).pipe(
        Effect.provide(captureLogs().layer)
      )
      const client = yield* grpcClient(server)
      const running = yield* sendText(client, "wait", true)
      const bytes = A2AService.sendMessage.requestSerialize({
        tenant: "",
        message: userMessage("more", { taskId: running.id, contextId: running.contextId }),
        configuration: undefined,
        metadata: {}
      })
      const answer = yield* rawCall(server.urls.GRPC!, A2AService.sendMessage.path, bytes)
      expect(answer.code).toBe(GRPC_STATUS_CODE.FAILED_PRECONDITION)
      expect(answer.details).toContain("is still running")
      expect(detailsOf(answer)?.reason).toBe("UNSUPPORTED_OPERATION")
    }))

  it.scopedLive("a v0.3 client (the SDK's legacy gRPC transport) is served by legacyGrpcService on the same port", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: endings, card }).pipe(Effect.provide(captureLogs().layer))
      const legacyOnly = {
        ...server.card,
        supportedInterfaces: server.card.supportedInterfaces.filter((i) =>
          i.protocolBinding === "GRPC" && i.protocolVersion === "0.3"
        )
      }
      const client = yield* Effect.promise(() =>
        new ClientFactory({ transports: [new GrpcTransportFactory({ legacyCompat: { enabled: true } })] })
          .createFromAgentCard(legacyOnly)
      )
      const completed = yield* sendText(client, "old")
      expect(completed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textOf(completed)).toBe("echo old")
      const failed = yield* sendText(client, "fail")
      expect(textOf(failed)).toMatch(opaqueFailure)
      const error = yield* Effect.flip(
        Effect.tryPromise(() => client.getTask({ tenant: "", id: "no-such-task", historyLength: undefined }))
      )
      expect(error.error).toMatchObject({ name: "TaskNotFoundError", status: GRPC_STATUS_CODE.NOT_FOUND })
    }))

  it.scopedLive("TLS: the server's credentials pass through; a client trusting the certificate is served, a plaintext one is not", () =>
    Effect.gen(function*() {
      const { cert, key } = selfSigned()
      const server = yield* A2AServer.make({
        agent: endings,
        card,
        grpc: {
          credentials: Grpc.ServerCredentials.createSsl(null, [{
            cert_chain: Buffer.from(cert),
            private_key: Buffer.from(key)
          }])
        }
      })
      const client = yield* Effect.promise(() =>
        new ClientFactory({
          transports: [
            new GrpcTransportFactory({ grpcChannelCredentials: Grpc.credentials.createSsl(Buffer.from(cert)) })
          ]
        }).createFromUrl(server.url)
      )
      expect(textOf(yield* sendText(client, "secure"))).toBe("echo secure")
      const bytes = A2AService.getTask.requestSerialize({ tenant: "", id: "x", historyLength: undefined })
      expect((yield* rawCall(server.urls.GRPC!, A2AService.getTask.path, bytes)).code).toBe(
        GRPC_STATUS_CODE.UNAVAILABLE
      )
    }))

  it.scopedLive("streaming: SendStreamingMessage yields the run's events up to COMPLETED", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: endings, card })
      const client = yield* grpcClient(server)
      const events = yield* Effect.promise(async () => {
        const seen: Array<unknown> = []
        const stream = client.sendMessageStream({
          tenant: "",
          message: userMessage("streamed"),
          configuration: undefined,
          metadata: {}
        })
        for await (const event of stream) seen.push(event)
        return seen
      })
      const states = events.map((event) => {
        const payload = (event as StreamResponse).payload
        return payload?.$case === "task" || payload?.$case === "statusUpdate" ? payload.value.status?.state : undefined
      })
      expect(states.length).toBeGreaterThan(1)
      expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED)
    }))

  it.scopedLive("GetTask of an unknown task is NOT_FOUND with an ErrorInfo, to the raw peer and to the SDK's client", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: endings, card })
      const bytes = A2AService.getTask.requestSerialize({ tenant: "", id: "no-such-task", historyLength: undefined })
      const answer = yield* rawCall(server.urls.GRPC!, A2AService.getTask.path, bytes)
      expect(answer.code).toBe(GRPC_STATUS_CODE.NOT_FOUND)
      expect(detailsOf(answer)).toMatchObject({ code: GRPC_STATUS_CODE.NOT_FOUND, reason: "TASK_NOT_FOUND" })
      const client = yield* grpcClient(server)
      const error = yield* Effect.flip(
        Effect.tryPromise(() => client.getTask({ tenant: "", id: "no-such-task", historyLength: undefined }))
      )
      expect(error.error).toMatchObject({ name: "TaskNotFoundError", status: GRPC_STATUS_CODE.NOT_FOUND })
    }))

  it.scopedLive("a fault outside the run is INTERNAL with only an error id and an ErrorInfo; the log has the rest under that id", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const store = new InMemoryTaskStore()
      store.load = () => Promise.reject(new Error("secret: connection string postgres://admin:pw@db"))
      const server = yield* A2AServer.make({ agent: endings, card, taskStore: store }).pipe(Effect.provide(logs.layer))
      const bytes = A2AService.getTask.requestSerialize({ tenant: "", id: "any", historyLength: undefined })
      const answer = yield* rawCall(server.urls.GRPC!, A2AService.getTask.path, bytes)
      expect(answer.code).toBe(GRPC_STATUS_CODE.INTERNAL)
      expect(answer.details).toMatch(opaqueInternal)
      expect(detailsOf(answer)).toMatchObject({ reason: "INTERNAL_ERROR", message: answer.details })
      const errorId = answer.details.match(/[0-9a-f]{12}/)![0]
      // Logged where it happened (the task store's watch), under the id the caller got.
      const logged = yield* eventually(
        Effect.sync(() => logs.lines.find((line) => line.annotations.errorId === errorId)),
        (line) => line !== undefined
      )
      expect(String(logged?.annotations.cause)).toContain("secret: connection string")
      expect(JSON.stringify([answer.details, detailsOf(answer)])).not.toContain("secret")
    }))

  it.scopedLive("malformed protobuf frames are INVALID_ARGUMENT with an ErrorInfo, on v1.0 and v0.3", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: endings, card })
      for (const path of [A2AService.sendMessage.path, "/a2a.v1.A2AService/SendMessage"]) {
        const answer = yield* rawCall(server.urls.GRPC!, path, new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]))
        expect(answer.code).toBe(GRPC_STATUS_CODE.INVALID_ARGUMENT)
        expect(detailsOf(answer)).toMatchObject({ code: GRPC_STATUS_CODE.INVALID_ARGUMENT, reason: "INVALID_PARAMS" })
      }
    }))

  it.scopedLive("a request nested deeper than JSON-RPC allows is INVALID_ARGUMENT with an ErrorInfo, before anything runs", () =>
    Effect.gen(function*() {
      let runs = 0
      const agent: AgentExecutor.Agent = () => Effect.sync(() => (runs++, AgentExecutor.completedText("ran")))
      const server = yield* A2AServer.make({ agent, card })
      let nested: Record<string, unknown> = { leaf: true }
      for (let i = 0; i < 300; i++) nested = { a: nested }
      const bytes = A2AService.sendMessage.requestSerialize({
        tenant: "",
        message: userMessage("deep"),
        configuration: undefined,
        metadata: nested
      })
      const answer = yield* rawCall(server.urls.GRPC!, A2AService.sendMessage.path, bytes)
      expect(answer.code).toBe(GRPC_STATUS_CODE.INVALID_ARGUMENT)
      expect(answer.details).toBe("Request nested deeper than 256 levels.")
      expect(detailsOf(answer)?.reason).toBe("INVALID_PARAMS")
      expect(runs).toBe(0)
    }))

  it.scopedLive("a field of the wrong wire type, which the decoder skips, is INVALID_ARGUMENT naming the field, as on JSON; nothing runs", () =>
    Effect.gen(function*() {
      let runs = 0
      const agent: AgentExecutor.Agent = () => Effect.sync(() => (runs++, AgentExecutor.completedText("ran")))
      const server = yield* A2AServer.make({ agent, card })
      // SendMessageRequest { message (2): Message { message_id (1), role (4), parts (5) } }, written by hand.
      const send = (message: (writer: BinaryWriter) => BinaryWriter) =>
        new BinaryWriter().uint32(18).bytes(message(new BinaryWriter()).finish()).finish()
      const part = (content: (writer: BinaryWriter) => BinaryWriter) => content(new BinaryWriter()).finish()
      const cases: ReadonlyArray<readonly [Uint8Array, string]> = [
        // Part.text (1) as a varint: the part is read without content.
        [
          send((m) =>
            m.uint32(10).string("m1").uint32(32).int32(1).uint32(42).bytes(part((p) => p.uint32(8).int32(5)))
          ),
          "Invalid params: message.parts[0] must have exactly one of text, raw, url, data."
        ],
        [
          send((m) => m.uint32(10).string("m2").uint32(32).int32(1).uint32(42).bytes(part((p) => p))),
          "Invalid params: message.parts[0] must have exactly one of text, raw, url, data."
        ],
        // Message.message_id (1) as a varint: read as absent, which the handler refuses (in its words, per method).
        [
          send((m) =>
            m.uint32(8).int32(5).uint32(32).int32(1).uint32(42).bytes(part((p) => p.uint32(10).string("hi")))
          ),
          "message.messageId is required"
        ]
      ]
      for (const path of [A2AService.sendMessage.path, A2AService.sendStreamingMessage.path]) {
        for (const [bytes, named] of cases) {
          const answer = yield* rawCall(
            server.urls.GRPC!,
            path,
            bytes,
            undefined,
            path === A2AService.sendStreamingMessage.path
          )
          expect(answer.code).toBe(GRPC_STATUS_CODE.INVALID_ARGUMENT)
          expect(answer.details.startsWith(named)).toBe(true)
          expect(detailsOf(answer)?.reason).toBe("INVALID_PARAMS")
        }
      }
      // GetTaskRequest { id (2) } as a varint: read as no id, refused.
      const getTask = yield* rawCall(
        server.urls.GRPC!,
        A2AService.getTask.path,
        new BinaryWriter().uint32(16).int32(5).finish()
      )
      expect(getTask.code).toBe(GRPC_STATUS_CODE.INVALID_ARGUMENT)
      expect(getTask.details).toBe("Task ID is required")
      expect(runs).toBe(0)
    }))

  it.scopedLive("fuzz: random and mutated frames get a well-formed answer, never UNKNOWN, never a raw message; the server keeps serving", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: endings, card, maxBodyBytes: 512 }).pipe(
        Effect.provide(captureLogs().layer)
      )
      const paths = Object.values(A2AService).filter((method) => !method.responseStream).map((method) => method.path)
      const random = FastCheck.tuple(
        FastCheck.constantFrom(...paths),
        FastCheck.uint8Array({ minLength: 1, maxLength: 900 })
      )
      // A valid SendMessage with some of its bytes replaced: past the decoder, into the handler.
      const valid = A2AService.sendMessage.requestSerialize({
        tenant: "",
        message: userMessage("fuzzed"),
        configuration: undefined,
        metadata: {}
      })
      const mutated = FastCheck.array(
        FastCheck.tuple(FastCheck.nat(valid.length - 1), FastCheck.integer({ min: 0, max: 255 })),
        {
          minLength: 1,
          maxLength: 4
        }
      ).map((edits) => {
        const bytes = Uint8Array.from(valid)
        for (const [at, byte] of edits) bytes[at] = byte
        return [A2AService.sendMessage.path, bytes] as const
      })
      for (const [path, bytes] of [...FastCheck.sample(random, 40), ...FastCheck.sample(mutated, 40)]) {
        const answer = yield* rawCall(server.urls.GRPC!, path, bytes)
        expect(answer.code).not.toBe(GRPC_STATUS_CODE.UNKNOWN)
        if (answer.code === GRPC_STATUS_CODE.OK) continue
        expect(detailsOf(answer)?.reason).toBeDefined()
        if (answer.code === GRPC_STATUS_CODE.INTERNAL) expect(answer.details).toMatch(opaqueInternal)
      }
      const client = yield* grpcClient(server)
      expect(textOf(yield* sendText(client, "still here"))).toBe("echo still here")
    }))

  it.scopedLive("an oversized message is INVALID_ARGUMENT with an ErrorInfo up to twice the bound, grpc-js's RESOURCE_EXHAUSTED beyond", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: endings, card, maxBodyBytes: 1024 })
      const over = yield* rawCall(server.urls.GRPC!, A2AService.sendMessage.path, new Uint8Array(1500))
      expect(over.code).toBe(GRPC_STATUS_CODE.INVALID_ARGUMENT)
      expect(detailsOf(over)).toMatchObject({ code: GRPC_STATUS_CODE.INVALID_ARGUMENT, reason: "INVALID_PARAMS" })
      const farOver = yield* rawCall(server.urls.GRPC!, A2AService.sendMessage.path, new Uint8Array(4096))
      expect(farOver.code).toBe(GRPC_STATUS_CODE.RESOURCE_EXHAUSTED)
    }))

  it.scopedLive("over maxInFlight, a send is RESOURCE_EXHAUSTED with RetryInfo and retry-after, counted in a2a.server.shed", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const name = `grpc-shed-${crypto.randomUUID()}`
      const agent: AgentExecutor.Agent = () => Effect.as(Deferred.await(gate), AgentExecutor.completedText("done"))
      const server = yield* A2AServer.make({ agent, card: { ...card, name }, maxInFlight: 1 })
      const client = yield* grpcClient(server)
      const first = yield* sendText(client, "first", true)
      const bytes = A2AService.sendMessage.requestSerialize({
        tenant: "",
        message: userMessage("second"),
        configuration: undefined,
        metadata: {}
      })
      const shed = yield* rawCall(server.urls.GRPC!, A2AService.sendMessage.path, bytes)
      expect(shed.code).toBe(GRPC_STATUS_CODE.RESOURCE_EXHAUSTED)
      expect(detailsOf(shed)?.types).toContain("type.googleapis.com/google.rpc.RetryInfo")
      expect(shed.metadata?.get("retry-after")).toEqual(["1"])
      const count = yield* Metric.value(
        Observability.serverShed.pipe(Metric.tagged("agent", name), Metric.tagged("bound", "server"))
      )
      expect(count.count).toBe(1)
      yield* Deferred.succeed(gate, void 0)
      yield* eventually(
        Effect.promise(() => client.getTask({ tenant: "", id: first.id, historyLength: undefined })),
        (task) => task.status?.state === TaskState.TASK_STATE_COMPLETED
      )
      const after = yield* rawCall(server.urls.GRPC!, A2AService.sendMessage.path, bytes)
      expect(after.code).toBe(GRPC_STATUS_CODE.OK)
    }))

  it.scopedLive("a subscriber that leaves lets go at once of its place on the task's bus and of its hold on maxInFlight", () =>
    Effect.gen(function*() {
      const listeners = yield* busListeners
      const gate = yield* Deferred.make<void>()
      const agent: AgentExecutor.Agent = () => Effect.as(Deferred.await(gate), AgentExecutor.completedText("done"))
      const server = yield* A2AServer.make({ agent, card, maxInFlight: 2 })
      const client = yield* grpcClient(server)
      const running = yield* sendText(client, "long", true)
      const before = listeners()
      const remote = new Grpc.Client(server.urls.GRPC!, Grpc.credentials.createInsecure())
      yield* Effect.addFinalizer(() => Effect.sync(() => remote.close()))
      const metadata = new Grpc.Metadata()
      metadata.set("a2a-version", "1.0")
      const subscription = remote.makeServerStreamRequest(
        A2AService.subscribeToTask.path,
        A2AService.subscribeToTask.requestSerialize,
        A2AService.subscribeToTask.responseDeserialize,
        { tenant: "", id: running.id },
        metadata
      )
      subscription.on("error", () => undefined)
      // Its first event is the task as it is: by then it listens on the task's bus.
      yield* Effect.async<void>((resume) => void subscription.once("data", () => resume(Effect.void)))
      expect(listeners()).toBeGreaterThan(before)
      const third = A2AService.sendMessage.requestSerialize({
        tenant: "",
        message: userMessage("third"),
        configuration: undefined,
        metadata: {}
      })
      expect((yield* rawCall(server.urls.GRPC!, A2AService.sendMessage.path, third)).code).toBe(
        GRPC_STATUS_CODE.RESOURCE_EXHAUSTED
      )
      subscription.cancel()
      yield* eventually(Effect.sync(listeners), (count) => count === before)
      const admitted = A2AService.sendMessage.requestSerialize({
        tenant: "",
        message: userMessage("admitted"),
        configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
        metadata: {}
      })
      expect((yield* rawCall(server.urls.GRPC!, A2AService.sendMessage.path, admitted)).code).toBe(GRPC_STATUS_CODE.OK)
      yield* Deferred.succeed(gate, void 0)
    }))

  it.scopedLive("the Idempotency-Key metadata reaches the handler: a repeat with a new message id gets the same task", () =>
    Effect.gen(function*() {
      let runs = 0
      const agent: AgentExecutor.Agent = () => Effect.sync(() => (runs++, AgentExecutor.completedText("once")))
      const server = yield* A2AServer.make({ agent, card, idempotency: {} }).pipe(
        Effect.provide(Layer.fresh(IdempotencyLedger.layerMemory()))
      )
      const client = yield* grpcClient(server)
      const key = crypto.randomUUID()
      const first = yield* sendText(client, "book", false, { "Idempotency-Key": key })
      const repeat = yield* sendText(client, "book", false, { "Idempotency-Key": key })
      expect(repeat.id).toBe(first.id)
      expect(runs).toBe(1)
    }))

  it.scopedLive("traceparent metadata makes the run a child of the caller's span", () =>
    Effect.gen(function*() {
      const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
      const parent = "00f067aa0ba902b7"
      let seen: Tracer.Span | undefined
      const agent: AgentExecutor.Agent = () =>
        Effect.map(Effect.orDie(Effect.currentSpan), (span) => {
          seen = span
          return AgentExecutor.completedText("traced")
        })
      const server = yield* A2AServer.make({ agent, card })
      yield* sendText(yield* grpcClient(server), "trace me", false, { traceparent: `00-${trace}-${parent}-01` })
      expect(seen?.traceId).toBe(trace)
      expect(Option.map(seen!.parent, (span) => span.spanId)).toEqual(Option.some(parent))
    }))

  it.scopedLive("an error the handler throws is logged whole under the error id; the caller gets INTERNAL with that id only", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const identity = () => {
        throw new Error("secret: the identity service token is abc123")
      }
      const server = yield* A2AServer.make({ agent: endings, card, idempotency: { identity } }).pipe(
        Effect.provide(Layer.merge(Layer.fresh(IdempotencyLedger.layerMemory()), logs.layer))
      )
      const bytes = A2AService.sendMessage.requestSerialize({
        tenant: "",
        message: userMessage("keyed"),
        configuration: undefined,
        metadata: {}
      })
      const answer = yield* rawCall(server.urls.GRPC!, A2AService.sendMessage.path, bytes, {
        "a2a-version": "1.0",
        "idempotency-key": crypto.randomUUID()
      })
      expect(answer.code).toBe(GRPC_STATUS_CODE.INTERNAL)
      expect(answer.details).toMatch(opaqueInternal)
      expect(detailsOf(answer)).toMatchObject({ reason: "INTERNAL_ERROR", message: answer.details })
      const errorId = answer.details.match(/[0-9a-f]{12}/)![0]
      const logged = logs.lines.find((line) => line.annotations.errorId === errorId)
      expect(logged?.message).toBe("Unexpected error in the gRPC endpoint")
      expect(String(logged?.annotations.cause)).toContain("secret: the identity service token")
    }))

  it.live("closing the scope shuts the port: a new call is refused", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const server = yield* Scope.extend(A2AServer.make({ agent: endings, card }), scope)
      const bytes = A2AService.getTask.requestSerialize({ tenant: "", id: "x", historyLength: undefined })
      expect((yield* rawCall(server.urls.GRPC!, A2AService.getTask.path, bytes)).code).toBe(GRPC_STATUS_CODE.NOT_FOUND)
      yield* Scope.close(scope, Exit.void)
      const after = yield* rawCall(server.urls.GRPC!, A2AService.getTask.path, bytes)
      expect(after.code).toBe(GRPC_STATUS_CODE.UNAVAILABLE)
    }))

  it.live("graceful shutdown: a blocking gRPC send in progress gets its COMPLETED answer", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const agent: AgentExecutor.Agent = () =>
        Effect.zipRight(
          Deferred.succeed(started, void 0),
          Effect.as(Deferred.await(release), AgentExecutor.completedText("finished"))
        )
      const scope = yield* Scope.make()
      const server = yield* Scope.extend(A2AServer.make({ agent, card, shutdownTimeout: "5 seconds" }), scope)
      const client = yield* grpcClient(server)
      const sending = yield* Effect.fork(sendText(client, "slow"))
      yield* Deferred.await(started)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* Effect.sleep("100 millis")
      yield* Deferred.succeed(release, void 0)
      const task = yield* Fiber.join(sending).pipe(Effect.timeout("5 seconds"))
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textOf(task)).toBe("finished")
      yield* Fiber.join(closing).pipe(Effect.timeout("5 seconds"))
    }))

  it(
    "without gRPC's packages, the default serves JSON-RPC and loads none of them; naming GRPC fails start-up, typed",
    () => {
      // A preloaded hook makes every load of @grpc/grpc-js and @bufbuild/protobuf throw.
      expect(runWithout("serverWithoutGrpc.ts", "@grpc/grpc-js|@bufbuild/protobuf")).toEqual({
        bindings: ["JSONRPC", "JSONRPC", "HTTP+JSON"],
        grpcUrl: null,
        rpcAnswer: -32001,
        named: { reason: "MissingPackage", transport: "GRPC", names: true }
      })
    },
    60_000
  )
})
