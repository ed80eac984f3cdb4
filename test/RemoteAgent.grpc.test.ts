import { type Task, TaskState } from "@a2a-js/sdk"
import { encodeGrpcStatusDetails, GRPC_STATUS_DETAILS_BIN } from "@a2a-js/sdk/errors/grpc"
import { A2AService } from "@a2a-js/sdk/server/grpc"
import { BinaryWriter } from "@bufbuild/protobuf/wire"
import { describe, expect, it } from "@effect/vitest"
import * as grpc from "@grpc/grpc-js"
import { Chunk, Duration, Effect, Fiber, Option, Redacted, Stream } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import * as RetryPolicy from "../src/RetryPolicy.js"
import * as FaultProxy from "./fixtures/faultProxy.js"
import { onlyTransportWorks } from "./fixtures/onlyTransport.js"
import { agentMessage, closedPort } from "./fixtures/peers.js"
import { eventually } from "./fixtures/serverAgents.js"
import { cardServer, cardWith, grpcServer, sdkPeers } from "./fixtures/transportPeers.js"

let agents = 0
const agentFor = (url: string, options: Partial<RemoteAgent.Options> = {}) =>
  RemoteAgent.make({ name: `grpc-${++agents}`, url, timeout: "5 seconds", ...options })

/** A proxy to the gRPC server at `address` (`host:port`), and the proxy's own address. */
const proxyTo = (address: string) =>
  Effect.map(FaultProxy.make(() => ({ host: "127.0.0.1", port: Number(address.split(":")[1]) })), (proxy) => ({
    address: new URL(proxy.url).host,
    cut: proxy.cut
  }))

/** An agent whose card lists only gRPC, at `address`. */
const agentAt = (address: string, options: Partial<RemoteAgent.Options> = {}) =>
  agentFor("http://127.0.0.1:1", { card: cardWith([{ protocolBinding: "GRPC", url: address }]), ...options })

const taskOf = (id: string, state: TaskState, text = ""): Task => ({
  id,
  contextId: "ctx-1",
  status: {
    state,
    message: { ...agentMessage(text), taskId: id, contextId: "ctx-1" },
    timestamp: new Date().toISOString()
  },
  artifacts: [],
  history: [],
  metadata: undefined
})

type Callback = (error: Partial<grpc.StatusObject> | null, value?: unknown) => void

/** A gRPC peer that answers SendMessage (and GetTask) with `answer`. */
const unaryPeer = (answer: (callback: Callback) => void) =>
  grpcServer({
    sendMessage: (_call: unknown, callback: Callback) => answer(callback),
    getTask: (_call: unknown, callback: Callback) => answer(callback)
  })

const trailer = (entries: Record<string, string | Buffer>) => {
  const metadata = new grpc.Metadata()
  for (const [key, value] of Object.entries(entries)) metadata.set(key, value)
  return metadata
}

/** `google.rpc.Status` holding one `google.rpc.RetryInfo` of `seconds` and `nanos`, which the SDK has no encoder for. */
const retryInfoStatus = (seconds: number, nanos: number) => {
  const delay = new BinaryWriter().uint32(8).int64(seconds).uint32(16).int32(nanos).finish()
  const info = new BinaryWriter().uint32(10).bytes(delay).finish()
  const any = new BinaryWriter().uint32(10).string("type.googleapis.com/google.rpc.RetryInfo").uint32(18).bytes(info)
    .finish()
  return Buffer.from(
    new BinaryWriter().uint32(8).int32(8).uint32(18).string("slow down").uint32(26).bytes(any).finish()
  )
}

describe("RemoteAgent over gRPC, against the SDK's grpcService", () => {
  it.scopedLive("a card that offers only gRPC works: every ending, a stream and getTask", () =>
    onlyTransportWorks("GRPC"))

  it.scopedLive("an A2A error with its ErrorInfo is a ProtocolError with its A2A name, refused, with the status's name", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["GRPC"])
      const agent = yield* agentFor(peers.url)
      expect(yield* Effect.flip(agent.getTask("no-such-task"))).toMatchObject({
        reason: "ProtocolError",
        protocolError: "TaskNotFound",
        code: -32001,
        delivery: "Refused",
        transport: "GRPC",
        grpcStatus: "NOT_FOUND"
      })
      const done = yield* agent.send("complete")
      expect(yield* Effect.flip(agent.cancel(done.taskId))).toMatchObject({
        protocolError: "TaskNotCancelable",
        delivery: "Refused",
        grpcStatus: "FAILED_PRECONDITION"
      })
      for (
        const [code, reason, name, delivery] of [
          [grpc.status.FAILED_PRECONDITION, "UNSUPPORTED_OPERATION", "UnsupportedOperation", "Refused"],
          [grpc.status.INVALID_ARGUMENT, "CONTENT_TYPE_NOT_SUPPORTED", "ContentTypeNotSupported", "Refused"],
          [grpc.status.INVALID_ARGUMENT, "INVALID_PARAMS", "InvalidParams", "Refused"],
          // 1.0.1's FAILED_PRECONDITION, and 1.0.0's UNIMPLEMENTED: the reason decides, whatever the code.
          [grpc.status.FAILED_PRECONDITION, "VERSION_NOT_SUPPORTED", "VersionNotSupported", "Refused"],
          [grpc.status.UNIMPLEMENTED, "VERSION_NOT_SUPPORTED", "VersionNotSupported", "Refused"],
          [grpc.status.UNIMPLEMENTED, "UNSUPPORTED_OPERATION", "UnsupportedOperation", "Refused"],
          [grpc.status.UNIMPLEMENTED, "PUSH_NOTIFICATION_NOT_SUPPORTED", "PushNotificationNotSupported", "Refused"],
          [grpc.status.INTERNAL, "INVALID_AGENT_RESPONSE", "InvalidAgentResponse", "Unknown"]
        ] as const
      ) {
        const { address } = yield* unaryPeer((callback) =>
          callback({
            code,
            details: reason,
            metadata: trailer({ [GRPC_STATUS_DETAILS_BIN]: encodeGrpcStatusDetails(code, reason, reason) })
          })
        )
        const error = yield* Effect.flip((yield* agentAt(address)).send("hello"))
        expect(error).toMatchObject({ reason: "ProtocolError", protocolError: name, delivery, transport: "GRPC" })
      }
    }))

  it.scopedLive("a status without an A2A error: a refusal's code is refused, UNKNOWN and INTERNAL are unknown", () =>
    Effect.gen(function*() {
      for (
        const [code, delivery] of [
          [grpc.status.PERMISSION_DENIED, "Refused"],
          [grpc.status.UNIMPLEMENTED, "Refused"],
          [grpc.status.UNKNOWN, "Unknown"],
          [grpc.status.INTERNAL, "Unknown"]
        ] as const
      ) {
        const { address } = yield* unaryPeer((callback) => callback({ code, details: "no" }))
        const error = yield* Effect.flip((yield* agentAt(address)).send("hello"))
        expect(error).toMatchObject({ reason: "HttpStatus", delivery, grpcStatus: grpc.status[code] })
        expect(error.status).toBeUndefined()
      }
    }))

  it.scopedLive("RESOURCE_EXHAUSTED is gRPC's 429: refused, with retry-after from a trailer or a RetryInfo detail", () =>
    Effect.gen(function*() {
      const header = yield* unaryPeer((callback) =>
        callback({
          code: grpc.status.RESOURCE_EXHAUSTED,
          details: "slow down",
          metadata: trailer({ "retry-after": "7" })
        })
      )
      const fromHeader = yield* Effect.flip((yield* agentAt(header.address)).send("hello"))
      expect(fromHeader).toMatchObject({ reason: "HttpStatus", delivery: "Refused", grpcStatus: "RESOURCE_EXHAUSTED" })
      expect(Duration.toMillis(fromHeader.retryAfter!)).toBe(7000)
      expect(fromHeader.message).toContain("(HttpStatus gRPC RESOURCE_EXHAUSTED, request refused, nothing ran)")
      const detail = yield* unaryPeer((callback) =>
        callback({
          code: grpc.status.RESOURCE_EXHAUSTED,
          details: "slow down",
          metadata: trailer({ [GRPC_STATUS_DETAILS_BIN]: retryInfoStatus(2, 500_000_000) })
        })
      )
      const fromDetail = yield* Effect.flip((yield* agentAt(detail.address)).send("hello"))
      expect(fromDetail).toMatchObject({ reason: "HttpStatus", delivery: "Refused" })
      expect(Duration.toMillis(fromDetail.retryAfter!)).toBe(2500)
    }))

  it.scopedLive("RetryPolicy sends again, without a key, what RESOURCE_EXHAUSTED refused, after its RetryInfo delay", () =>
    Effect.gen(function*() {
      let calls = 0
      const { address } = yield* unaryPeer((callback) =>
        ++calls === 1
          ? callback({
            code: grpc.status.RESOURCE_EXHAUSTED,
            details: "slow down",
            metadata: trailer({ [GRPC_STATUS_DETAILS_BIN]: retryInfoStatus(0, 100_000_000) })
          })
          : callback(null, {
            payload: { $case: "task", value: taskOf("t-1", TaskState.TASK_STATE_COMPLETED, "second time") }
          })
      )
      const started = Date.now()
      const outcome = yield* (yield* agentAt(address)).send("hello").pipe(
        RetryPolicy.retry({ base: "10 millis", maxAttempts: 3 }, { idempotent: false })
      )
      expect(outcome).toMatchObject({ _tag: "Completed", text: "second time" })
      expect(calls).toBe(2)
      expect(Date.now() - started).toBeGreaterThanOrEqual(90)
    }))

  it.scopedLive("a garbled grpc-status-details-bin trailer ends the call typed, InvalidResponse, on a send and a stream", () =>
    Effect.gen(function*() {
      // Wire type 7 does not exist: the SDK's decoder throws "cant skip wire type 7" on it.
      const garbled = Buffer.from([0x0f, 0xff, 0xff, 0xff])
      const garbling = (callback: Callback) =>
        callback({
          code: grpc.status.NOT_FOUND,
          details: "garbled",
          metadata: trailer({ [GRPC_STATUS_DETAILS_BIN]: garbled })
        })
      const { address } = yield* grpcServer({
        sendMessage: (_call: unknown, callback: Callback) => garbling(callback),
        sendStreamingMessage: (call: grpc.ServerWritableStream<unknown, unknown>) =>
          call.emit(
            "error",
            Object.assign(new Error("garbled"), {
              code: grpc.status.NOT_FOUND,
              details: "garbled",
              metadata: trailer({ [GRPC_STATUS_DETAILS_BIN]: garbled })
            })
          )
      })
      const agent = yield* agentAt(address, { timeout: "3 seconds" })
      expect(yield* Effect.flip(agent.send("hello"))).toMatchObject({
        reason: "InvalidResponse",
        delivery: "Unknown",
        grpcStatus: "NOT_FOUND"
      })
      expect(yield* Effect.flip(Stream.runDrain(agent.stream("hello")))).toMatchObject({
        reason: "InvalidResponse",
        delivery: "Unknown"
      })
    }))

  it.scopedLive("an answer that cannot be decoded: InvalidResponse, Unknown", () =>
    Effect.gen(function*() {
      // The answer's bytes are no SendMessageResponse: wire type 7 does not exist.
      const garbling = {
        ...A2AService,
        sendMessage: { ...A2AService.sendMessage, responseSerialize: () => Buffer.from([0x0f, 0xff, 0xff]) }
      }
      const { address } = yield* grpcServer(
        { sendMessage: (_call: unknown, callback: Callback) => callback(null, {}) },
        garbling
      )
      expect(yield* Effect.flip((yield* agentAt(address)).send("hello"))).toMatchObject({
        reason: "InvalidResponse",
        delivery: "Unknown",
        grpcStatus: "INTERNAL"
      })
    }))

  it.scopedLive("connection refused, or an address with a scheme: ConnectionRefused, NotSent", () =>
    Effect.gen(function*() {
      const closed = new URL(yield* closedPort).host
      expect(yield* Effect.flip((yield* agentAt(closed)).send("hello"))).toMatchObject({
        reason: "ConnectionRefused",
        delivery: "NotSent",
        transport: "GRPC",
        grpcStatus: "UNAVAILABLE"
      })
      const peers = yield* sdkPeers(["GRPC"])
      expect(yield* Effect.flip((yield* agentAt(`http://${peers.grpc}`)).send("hello"))).toMatchObject({
        reason: "ConnectionRefused",
        delivery: "NotSent"
      })
    }))

  it.scopedLive("a call that outlives its timeout: Timeout, Unknown; interrupted: no error, the call is cancelled", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["GRPC"])
      const agent = yield* agentFor(peers.url, { timeout: "300 millis" })
      expect(yield* Effect.flip(agent.send("sleep 2000"))).toMatchObject({
        reason: "Timeout",
        delivery: "Unknown",
        grpcStatus: "CANCELLED"
      })
      const fiber = yield* Effect.fork(agent.send("sleep 2000", { timeout: "10 seconds" }))
      yield* Effect.sleep("150 millis")
      yield* Fiber.interrupt(fiber)
      expect(yield* agent.send("complete")).toMatchObject({ _tag: "Completed" })
    }))

  it.scopedLive("our time limit and an interruption cancel the call on the wire: the server sees each call cancelled", () =>
    Effect.gen(function*() {
      let started = 0
      let cancelled = 0
      const hanging = yield* grpcServer({
        sendMessage: (call: grpc.ServerUnaryCall<unknown, unknown>) => {
          started++
          call.on("cancelled", () => cancelled++)
        }
      })
      const agent = yield* agentAt(hanging.address, { timeout: "300 millis" })
      expect(yield* Effect.flip(agent.send("hello"))).toMatchObject({
        reason: "Timeout",
        delivery: "Unknown",
        grpcStatus: "CANCELLED"
      })
      yield* eventually(Effect.sync(() => cancelled), (n) => n === 1)
      const fiber = yield* Effect.fork(agent.send("hello", { timeout: "10 seconds" }))
      yield* eventually(Effect.sync(() => started), (n) => n === 2)
      yield* Fiber.interrupt(fiber)
      yield* eventually(Effect.sync(() => cancelled), (n) => n === 2)
    }))

  it.scopedLive("a peer killed mid-call, or shut down by force: ConnectionLost, Unknown", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["GRPC"])
      const line = yield* proxyTo(peers.grpc)
      const agent = yield* agentAt(line.address)
      const killed = yield* Effect.fork(Effect.flip(agent.send("sleep 3000")))
      yield* Effect.sleep("300 millis")
      line.cut()
      expect(yield* Fiber.join(killed)).toMatchObject({
        reason: "ConnectionLost",
        delivery: "Unknown",
        grpcStatus: "UNAVAILABLE"
      })
      const hanging = yield* grpcServer({ sendMessage: () => undefined })
      const shut = yield* Effect.fork(Effect.flip((yield* agentAt(hanging.address)).send("hello")))
      yield* Effect.sleep("300 millis")
      hanging.server.forceShutdown()
      expect(yield* Fiber.join(shut)).toMatchObject({
        reason: "ConnectionLost",
        delivery: "Unknown",
        grpcStatus: "CANCELLED"
      })
    }))

  it.scopedLive("a stream cut after its first event: StreamInterrupted, and one GetTask recovers the task's end", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      const holder: { cut?: () => void } = {}
      const server = yield* grpcServer({
        sendStreamingMessage: (call: grpc.ServerWritableStream<unknown, unknown>) => {
          calls.push("SendStreamingMessage")
          call.write({ payload: { $case: "task", value: taskOf("t-1", TaskState.TASK_STATE_WORKING) } })
          setTimeout(() => holder.cut?.(), 100)
        },
        getTask: (_call: unknown, callback: Callback) => {
          calls.push("GetTask")
          callback(null, taskOf("t-1", TaskState.TASK_STATE_COMPLETED, "recovered"))
        }
      })
      const line = yield* proxyTo(server.address)
      holder.cut = line.cut
      const events = Chunk.toArray(yield* Stream.runCollect((yield* agentAt(line.address)).stream("hello")))
      expect(events.at(-1)).toMatchObject({ _tag: "Finished", outcome: { _tag: "Completed", text: "recovered" } })
      expect(calls).toEqual(["SendStreamingMessage", "GetTask"])
    }))

  it.scopedLive("the agent's headers (static, Redacted or computed), the idempotency key and traceparent travel as metadata", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["GRPC"])
      const lastSent = () => peers.seen().at(-1)!.headers
      const agent = yield* agentFor(peers.url, {
        headers: { "X-Tenant": "acme", authorization: Redacted.make("Bearer s3cret") }
      })
      yield* agent.send("complete", { idempotencyKey: "key-1", headers: { "x-call": "1" } }).pipe(
        Effect.withSpan("caller")
      )
      expect(lastSent()).toMatchObject({
        "x-tenant": "acme",
        authorization: "Bearer s3cret",
        "idempotency-key": "key-1",
        "x-call": "1"
      })
      expect(lastSent().traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
      // The interceptor's own mark never leaves.
      expect(Object.keys(lastSent()).filter((k) => k.startsWith("effect-a2a"))).toEqual([])
      yield* Stream.runDrain(agent.stream("complete", { headers: { "x-call": "2" } }))
      expect(lastSent()).toMatchObject({ "x-tenant": "acme", "x-call": "2" })
      let token = 0
      const computed = yield* agentFor(peers.url, {
        headers: Effect.sync(() => ({ authorization: Redacted.make(`Bearer t${++token}`) }))
      })
      yield* computed.send("complete")
      yield* computed.send("complete")
      expect(lastSent().authorization).toBe(`Bearer t${token}`)
      expect(token).toBeGreaterThanOrEqual(3)
    }))

  it.scopedLive("a header HTTP takes but gRPC metadata does not: InvalidRequest, NotSent, its value never told", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["GRPC"])
      const agent = yield* agentFor(peers.url, { headers: { authorization: Redacted.make("Bearer caf\u00e9-s3cret") } })
      const before = peers.seen().length
      const error = yield* Effect.flip(agent.send("complete"))
      expect(error).toMatchObject({ reason: "InvalidRequest", delivery: "NotSent", transport: "GRPC" })
      expect(error.message).not.toContain("s3cret")
      expect(peers.seen().length).toBe(before)
      const binary = yield* Effect.flip(agent.send("complete", { headers: { "x-trace-bin": "text" } }))
      expect(binary).toMatchObject({ reason: "InvalidRequest", delivery: "NotSent" })
    }))

  it.scopedLive("the extended card over gRPC with a header metadata cannot carry: InvalidRequest at resolution, its value never told", () =>
    Effect.gen(function*() {
      const base = cardWith([{ protocolBinding: "GRPC", url: "127.0.0.1:1" }])
      const card = { ...base, capabilities: { extensions: [], ...base.capabilities, extendedAgentCard: true } }
      const error = yield* Effect.flip(
        agentAt("127.0.0.1:1", { card, headers: { authorization: Redacted.make("Bearer caf\u00e9-s3cret") } })
      )
      expect(error).toMatchObject({ _tag: "AgentCardResolutionError", reason: "InvalidRequest" })
      expect(error.message).not.toContain("s3cret")
    }))

  it.scopedLive("the channel credentials given are the ones used: TLS to a plaintext server never connects", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["GRPC"])
      const insecure = yield* agentFor(peers.url, { grpcChannelCredentials: grpc.credentials.createInsecure() })
      expect(yield* insecure.send("complete")).toMatchObject({ _tag: "Completed" })
      const tls = yield* agentFor(peers.url, { grpcChannelCredentials: grpc.credentials.createSsl() })
      expect(yield* Effect.flip(tls.send("complete"))).toMatchObject({
        reason: "ConnectionRefused",
        delivery: "NotSent",
        grpcStatus: "UNAVAILABLE"
      })
    }))

  it.scopedLive("the card is read over HTTP; its gRPC interface is reached without a fetch", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["GRPC"])
      const url = yield* cardServer(() => cardWith([{ protocolBinding: "GRPC", url: peers.grpc }]))
      expect(yield* (yield* agentFor(url)).send("complete")).toMatchObject({ _tag: "Completed" })
    }))
})

describe("RemoteAgent over gRPC, messages over a size limit, against our server", () => {
  it.scopedLive("an answer over grpc-js's 4 MiB is InvalidResponse, Unknown (the agent ran), and is not sent again without a key", () =>
    Effect.gen(function*() {
      let runs = 0
      const server = yield* A2AServer.make({
        agent: () =>
          Effect.sync(() => ++runs).pipe(Effect.as(AgentExecutor.completedText("x".repeat(3 * 1024 * 1024)))),
        card: { name: "big", description: "answers more than 4 MiB" },
        transports: ["GRPC"]
      })
      const agent = yield* agentFor(server.url, { timeout: "20 seconds" })
      const error = yield* Effect.flip(
        agent.send("charge").pipe(RetryPolicy.retry({ base: "10 millis", maxAttempts: 3 }, { idempotent: false }))
      )
      expect(error).toMatchObject({ reason: "InvalidResponse", delivery: "Unknown", grpcStatus: "RESOURCE_EXHAUSTED" })
      expect(runs).toBe(1)
    }))

  it.scopedLive("a request over the server's bound is refused, never sent again: INVALID_ARGUMENT with its ErrorInfo, or grpc-js's own RESOURCE_EXHAUSTED beyond twice the bound", () =>
    Effect.gen(function*() {
      let runs = 0
      const server = yield* A2AServer.make({
        agent: () => Effect.sync(() => ++runs).pipe(Effect.as(AgentExecutor.completedText("ok"))),
        card: { name: "small", description: "takes small requests" },
        transports: ["GRPC"],
        maxBodyBytes: 20_000
      })
      const agent = yield* agentFor(server.url)
      const send = (size: number) =>
        Effect.flip(
          agent.send("y".repeat(size)).pipe(
            RetryPolicy.retry({ base: "10 millis", maxAttempts: 3 }, { idempotent: false })
          )
        )
      expect(yield* send(30_000)).toMatchObject({
        reason: "ProtocolError",
        protocolError: "InvalidParams",
        delivery: "Refused",
        grpcStatus: "INVALID_ARGUMENT"
      })
      const far = yield* send(60_000)
      expect(far).toMatchObject({ reason: "HttpStatus", delivery: "Refused", grpcStatus: "RESOURCE_EXHAUSTED" })
      expect(Option.isNone(Option.fromNullable(far.retryAfter))).toBe(true)
      expect(runs).toBe(0)
      // The bound holds nothing against a request within it.
      expect(yield* agent.send("fits")).toMatchObject({ _tag: "Completed" })
      expect(runs).toBe(1)
    }))
})
