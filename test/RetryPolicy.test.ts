import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import {
  Chunk,
  Duration,
  Effect,
  Fiber,
  Logger,
  LogLevel,
  Metric,
  Option,
  Ref,
  Schema,
  Stream,
  TestClock
} from "effect"
import type { ServerResponse } from "node:http"
import * as A2AClientError from "../src/A2AClientError.js"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as FailureHint from "../src/FailureHint.js"
import * as GuardedRemoteAgent from "../src/GuardedRemoteAgent.js"
import * as Idempotency from "../src/Idempotency.js"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"
import * as Part from "../src/Part.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import type * as RemoteEvent from "../src/RemoteEvent.js"
import * as RemoteOutcome from "../src/RemoteOutcome.js"
import * as RetryPolicy from "../src/RetryPolicy.js"
import { cardFor, closedPort, json, type Peer, rawPeer, rpcId } from "./fixtures/peers.js"
import { captureLogs } from "./fixtures/serverAgents.js"

const error = (fields: Partial<ConstructorParameters<typeof A2AClientError.A2AClientError>[0]> = {}) =>
  new A2AClientError.A2AClientError({
    agent: "booking",
    operation: "SendMessage",
    reason: "ConnectionRefused",
    delivery: "NotSent",
    detail: "x",
    ...fields
  })

const fields = { agent: "booking", taskId: "t", contextId: "c", text: "", parts: [], artifacts: [] }
const completed = RemoteOutcome.Completed.make(fields)
const failed = (retryable: boolean) =>
  RemoteOutcome.Failed.make({
    ...fields,
    errorId: Option.some("0123456789ab"),
    hint: Option.some(FailureHint.FailureHint.make({ errorId: "0123456789ab", retryable }))
  })

/** A call that answers with the scripted results in turn, counting attempts. */
const scripted = (results: ReadonlyArray<A2AClientError.A2AClientError | RemoteOutcome.RemoteOutcome>) =>
  Effect.gen(function*() {
    const calls = yield* Ref.make(0)
    const call = Ref.getAndUpdate(calls, (n) => n + 1).pipe(
      Effect.flatMap((n) => {
        const result = results[Math.min(n, results.length - 1)]!
        return result._tag === "A2AClientError" ? Effect.fail(result) : Effect.succeed(result)
      })
    )
    return { call, calls: Ref.get(calls) }
  })

/** Runs `effect` while moving the test clock forward, so the policy's sleeps pass. */
const withClock = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    for (let i = 0; i < 200; i++) {
      yield* TestClock.adjust("100 millis")
      const done = yield* Fiber.poll(fiber)
      if (Option.isSome(done)) break
    }
    return yield* Fiber.join(fiber)
  })

describe("which errors are retried", () => {
  it("NotSent always; a transient refusal (429, a shutdown's 503) always; Unknown only with a key; never another refusal or an unavailable agent", () => {
    const plain = { idempotent: false }
    const keyed = { idempotent: true }
    expect(Option.isSome(RetryPolicy.retryReason(error(), plain))).toBe(true)
    expect(Option.isSome(RetryPolicy.retryReason(error({ reason: "Timeout", delivery: "Unknown" }), plain))).toBe(false)
    expect(Option.isSome(RetryPolicy.retryReason(error({ reason: "Timeout", delivery: "Unknown" }), keyed))).toBe(true)
    expect(Option.isSome(RetryPolicy.retryReason(error({ reason: "ConnectionLost", delivery: "Unknown" }), keyed)))
      .toBe(true)
    // Nothing ran: sent again after Retry-After, key or not.
    expect(RetryPolicy.retryReason(error({ reason: "HttpStatus", delivery: "Refused", status: 429 }), plain)).toEqual(
      Option.some("HttpStatus 429")
    )
    const shuttingDown = error({
      reason: "ProtocolError",
      delivery: "Refused",
      status: 503,
      code: -32004,
      protocolError: "UnsupportedOperation"
    })
    expect(RetryPolicy.retryReason(shuttingDown, plain)).toEqual(Option.some("HttpStatus 503"))
    // A bare 503 may be a proxy's after the server got the request: only with a key.
    const bare503 = error({ reason: "HttpStatus", delivery: "Unknown", status: 503 })
    expect(Option.isSome(RetryPolicy.retryReason(bare503, plain))).toBe(false)
    expect(RetryPolicy.retryReason(bare503, keyed)).toEqual(Option.some("HttpStatus 503"))
    expect(
      Option.isSome(RetryPolicy.retryReason(error({ reason: "HttpStatus", delivery: "Unknown", status: 500 }), plain))
    ).toBe(false)
    // Any other refusal would be refused again.
    expect(
      Option.isSome(RetryPolicy.retryReason(error({ reason: "HttpStatus", delivery: "Refused", status: 404 }), keyed))
    ).toBe(false)
    const terminal = error({
      reason: "ProtocolError",
      delivery: "Refused",
      code: -32004,
      protocolError: "UnsupportedOperation"
    })
    expect(Option.isSome(RetryPolicy.retryReason(terminal, keyed))).toBe(false)
    const internal = error({
      reason: "ProtocolError",
      delivery: "Unknown",
      status: 500,
      code: -32603,
      protocolError: "InternalError"
    })
    expect(RetryPolicy.retryReason(internal, keyed)).toEqual(Option.some("HttpStatus 500"))
    expect(Option.isSome(RetryPolicy.retryReason(internal, plain))).toBe(false)
    expect(Option.isSome(RetryPolicy.retryReason(error({ reason: "Unavailable" }), keyed))).toBe(false)
  })

  it("on gRPC the same rules read the status code: RESOURCE_EXHAUSTED as 429, UNAVAILABLE as 503, UNKNOWN and INTERNAL as 500", () => {
    const plain = { idempotent: false }
    const keyed = { idempotent: true }
    const grpc = (fields: Partial<ConstructorParameters<typeof A2AClientError.A2AClientError>[0]>) =>
      error({ transport: "GRPC", ...fields })
    const exhausted = grpc({ reason: "HttpStatus", delivery: "Refused", grpcStatus: "RESOURCE_EXHAUSTED" })
    expect(RetryPolicy.retryReason(exhausted, plain)).toEqual(Option.some("gRPC RESOURCE_EXHAUSTED"))
    // A server shutting down refuses with an A2A error under UNAVAILABLE.
    const shuttingDown = grpc({
      reason: "ProtocolError",
      delivery: "Refused",
      grpcStatus: "UNAVAILABLE",
      code: -32004,
      protocolError: "UnsupportedOperation"
    })
    expect(RetryPolicy.retryReason(shuttingDown, plain)).toEqual(Option.some("gRPC UNAVAILABLE"))
    const unknown = grpc({ reason: "HttpStatus", delivery: "Unknown", grpcStatus: "UNKNOWN" })
    expect(Option.isSome(RetryPolicy.retryReason(unknown, plain))).toBe(false)
    expect(RetryPolicy.retryReason(unknown, keyed)).toEqual(Option.some("gRPC UNKNOWN"))
    expect(
      Option.isSome(
        RetryPolicy.retryReason(grpc({ reason: "HttpStatus", delivery: "Refused", grpcStatus: "NOT_FOUND" }), keyed)
      )
    ).toBe(false)
    // A status grpc-js set on a lost connection is no server's answer: read by its reason, as on HTTP.
    const lost = grpc({ reason: "ConnectionLost", delivery: "Unknown", grpcStatus: "UNAVAILABLE" })
    expect(Option.isSome(RetryPolicy.retryReason(lost, plain))).toBe(false)
    expect(RetryPolicy.retryReason(lost, keyed)).toEqual(Option.some("ConnectionLost"))
    expect(
      RetryPolicy.retryReason(
        grpc({ reason: "ConnectionRefused", delivery: "NotSent", grpcStatus: "UNAVAILABLE" }),
        plain
      )
    ).toEqual(
      Option.some("ConnectionRefused")
    )
  })
})

describe("RetryPolicy.retry", () => {
  it.scopedLive("a server shutting down (503 refusing with a JSON-RPC error) is retried without a key; a2a.retry counts the retries made", () =>
    Effect.gen(function*() {
      let requests = 0
      // As our server answers while it shuts down.
      const peer = yield* rawPeer((_req, res, body) => {
        requests++
        res.writeHead(503, { "retry-after": "0", "content-type": "application/json" })
        res.end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: rpcId(body),
            error: { code: -32004, message: "The server is shutting down." }
          })
        )
      })
      const name = `shutting-down-${Date.now()}`
      const agent = yield* RemoteAgent.make({ name, url: peer.url })
      const failure = yield* Effect.flip(
        agent.send("book").pipe(RetryPolicy.retry({ base: "10 millis", maxAttempts: 3 }, { idempotent: false }))
      )
      expect(failure).toMatchObject({ reason: "ProtocolError", status: 503, attempts: 3, delivery: "Refused" })
      expect(requests).toBe(3)
      const retries = yield* Metric.value(
        Metric.counter("a2a.retry", { incremental: true }).pipe(
          Metric.tagged("reason", "HttpStatus 503"),
          Metric.tagged("agent", name)
        )
      )
      // Three attempts are two retries: the last attempt is given up on, not retried.
      expect(retries.count).toBe(2)
      // Every attempt was refused: nothing ran, and the last error still says so.
      expect(failure.detail).not.toContain("an earlier attempt may have been received")
    }))

  it.effect("retries NotSent errors until the call succeeds", () =>
    Effect.gen(function*() {
      const { call, calls } = yield* scripted([error(), error(), completed])
      const outcome = yield* withClock(call.pipe(RetryPolicy.retry({ maxAttempts: 5 }, { idempotent: false })))
      expect(outcome._tag).toBe("Completed")
      expect(yield* calls).toBe(3)
    }))

  it.effect("does not resend an Unknown delivery without an idempotency key", () =>
    Effect.gen(function*() {
      const { call, calls } = yield* scripted([error({ reason: "Timeout", delivery: "Unknown" }), completed])
      const failure = yield* withClock(Effect.flip(call.pipe(RetryPolicy.retry({}, { idempotent: false }))))
      expect(failure).toMatchObject({ reason: "Timeout", attempts: 1 })
      expect(yield* calls).toBe(1)
    }))

  it.effect("gives up after maxAttempts with the last typed error and the attempt count", () =>
    Effect.gen(function*() {
      const { call, calls } = yield* scripted([error({ reason: "ConnectionLost", delivery: "Unknown" })])
      const failure = yield* withClock(
        Effect.flip(call.pipe(RetryPolicy.retry({ maxAttempts: 3 }, { idempotent: true })))
      )
      expect(failure).toMatchObject({ _tag: "A2AClientError", reason: "ConnectionLost", attempts: 3 })
      expect(yield* calls).toBe(3)
    }))

  it.effect("the last error says Unknown when an earlier attempt may have been received, even if the last was never sent", () =>
    Effect.gen(function*() {
      const { call } = yield* scripted([
        error({ reason: "Timeout", delivery: "Unknown" }),
        error({ reason: "ConnectionRefused", delivery: "NotSent" })
      ])
      const failure = yield* withClock(
        Effect.flip(call.pipe(RetryPolicy.retry({ maxAttempts: 3 }, { idempotent: true })))
      )
      expect(failure).toMatchObject({ reason: "ConnectionRefused", delivery: "Unknown", attempts: 3 })
      expect(failure.detail).toContain("an earlier attempt may have been received")
      const { call: neverSent } = yield* scripted([error({ reason: "ConnectionRefused", delivery: "NotSent" })])
      const refused = yield* withClock(
        Effect.flip(neverSent.pipe(RetryPolicy.retry({ maxAttempts: 2 }, { idempotent: false })))
      )
      expect(refused).toMatchObject({ delivery: "NotSent", attempts: 2, detail: "x" })
      // Data-first, the same policy.
      const dataFirst = yield* withClock(
        Effect.flip(RetryPolicy.retry(neverSent, { maxAttempts: 2 }, { idempotent: false }))
      )
      expect(dataFirst).toMatchObject({ delivery: "NotSent", attempts: 2 })
      // A last refusal, after an attempt that may have been acted on, cannot say that nothing ran either.
      const { call: mixed } = yield* scripted([
        error({ reason: "Timeout", delivery: "Unknown" }),
        error({ reason: "HttpStatus", delivery: "Refused", status: 429 })
      ])
      const last = yield* withClock(
        Effect.flip(mixed.pipe(RetryPolicy.retry({ maxAttempts: 2 }, { idempotent: true })))
      )
      expect(last).toMatchObject({ delivery: "Unknown", status: 429, attempts: 2 })
      expect(last.detail).toContain("an earlier attempt may have been received")
    }))

  it.effect("a retry logs at Debug, its delay in whole milliseconds", () =>
    Effect.gen(function*() {
      const { layer: capture, lines } = captureLogs()
      const retried = Effect.flatMap(
        scripted([error({ reason: "ConnectionRefused", delivery: "NotSent" }), completed]),
        ({ call }) =>
          call.pipe(RetryPolicy.retry({ base: "143 millis" }, { idempotent: false }), Effect.provide(capture))
      )
      yield* withClock(retried)
      expect(lines).toEqual([])
      yield* withClock(Logger.withMinimumLogLevel(retried, LogLevel.Debug))
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatchObject({
        level: "DEBUG",
        message: expect.stringMatching(/^attempt \d+ failed \(ConnectionRefused\); retrying in \d+ms$/)
      })
    }))

  it.effect("stops when the time budget would be exceeded", () =>
    Effect.gen(function*() {
      const { call, calls } = yield* scripted([
        error({ reason: "HttpStatus", delivery: "Refused", status: 429, retryAfter: Duration.seconds(10) })
      ])
      const failure = yield* withClock(
        Effect.flip(call.pipe(RetryPolicy.retry({ maxAttempts: 10, budget: "15 seconds" }, { idempotent: false })))
      )
      expect(failure.attempts).toBe(2)
      expect(yield* calls).toBe(2)
    }))

  it.effect("waits at least Retry-After", () =>
    Effect.gen(function*() {
      const { call, calls } = yield* scripted([
        error({ reason: "HttpStatus", delivery: "Refused", status: 429, retryAfter: Duration.seconds(3) }),
        completed
      ])
      const fiber = yield* Effect.fork(call.pipe(RetryPolicy.retry({}, { idempotent: false })))
      yield* TestClock.adjust("2900 millis")
      expect(yield* calls).toBe(1)
      yield* TestClock.adjust("200 millis")
      expect((yield* Fiber.join(fiber))._tag).toBe("Completed")
      expect(yield* calls).toBe(2)
    }))

  it.effect("delays grow with jitter between base and cap", () =>
    Effect.gen(function*() {
      const delays: Array<number> = []
      const { call } = yield* scripted([error()])
      const traced = call.pipe(Effect.tapError(() => Effect.sync(() => delays.push(Date.now()))))
      void traced
      const schedule = RetryPolicy.schedule({ base: "100 millis", cap: "1 second", maxAttempts: 50, budget: "1 hour" })
      const driver = yield* Effect.flip(
        Effect.fail(error()).pipe(Effect.retry({ schedule, while: () => delays.push(0) < 20 }))
      ).pipe(Effect.fork)
      yield* TestClock.adjust("1 minute")
      yield* Fiber.join(driver)
      expect(delays.length).toBe(20)
    }))

  it.effect("a FAILED outcome is retried as a new task only when asked, and only when its hint allows", () =>
    Effect.gen(function*() {
      const once = yield* scripted([failed(true), completed])
      expect((yield* withClock(once.call.pipe(RetryPolicy.retry({}, { idempotent: true }))))._tag).toBe("Failed")
      expect(yield* once.calls).toBe(1)

      const optIn = yield* scripted([failed(true), completed])
      expect((yield* withClock(optIn.call.pipe(RetryPolicy.retry({ retryFailed: true }, { idempotent: true }))))._tag)
        .toBe(
          "Completed"
        )
      expect(yield* optIn.calls).toBe(2)

      const notRetryable = yield* scripted([failed(false), completed])
      expect(
        (yield* withClock(notRetryable.call.pipe(RetryPolicy.retry({ retryFailed: true }, { idempotent: true }))))._tag
      )
        .toBe("Failed")

      const sameTask = yield* scripted([failed(true), completed])
      const kept = yield* withClock(
        sameTask.call.pipe(RetryPolicy.retry({ retryFailed: true }, { idempotent: true, continuesTask: true }))
      )
      expect(kept._tag).toBe("Failed")
      expect(yield* sameTask.calls).toBe(1)

      const exhausted = yield* scripted([failed(true)])
      const last = yield* withClock(
        exhausted.call.pipe(RetryPolicy.retry({ retryFailed: true, maxAttempts: 2 }, { idempotent: true }))
      )
      expect(last._tag).toBe("Failed")
      expect(yield* exhausted.calls).toBe(2)
    }))
})

describe("against a real server", () => {
  it.scopedLive("a 503 with Retry-After, then success: resent once, with the same idempotency key", () =>
    Effect.gen(function*() {
      const keys: Array<string | undefined> = []
      const peer = yield* rawPeer((req, res, body) => {
        keys.push(req.headers["idempotency-key"] as string | undefined)
        if (keys.length === 1) {
          res.writeHead(503, { "retry-after": "0", "content-type": "text/plain" })
          return res.end("busy")
        }
        json(res, 200, {
          jsonrpc: "2.0",
          id: rpcId(body),
          result: {
            task: {
              id: "t-1",
              contextId: "c-1",
              status: {
                state: TaskState[TaskState.TASK_STATE_COMPLETED],
                message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: "booked" }] }
              },
              artifacts: [],
              history: []
            }
          }
        })
      })
      const agent = yield* RemoteAgent.make({ name: "booking", url: peer.url })
      const outcome = yield* agent.send("book", { idempotencyKey: "key-1" }).pipe(
        RetryPolicy.retry({ base: "10 millis" }, { idempotent: true })
      )
      expect(outcome).toMatchObject({ _tag: "Completed", text: "booked" })
      expect(keys).toEqual(["key-1", "key-1"])
    }))
})

describe("retryFailed against our server, with request-level idempotency", () => {
  const input = { parts: [Part.TextPart.make({ text: "book 4821" })], contextId: "trip-1" }
  const options = { idempotencyKey: "order-1" }
  const policy = { retryFailed: true, base: "10 millis" } as const

  /** A booking agent that fails its first run, its seat reserved once per trip; `book` calls it through the retry. */
  const bookTwice = (
    book: (remote: RemoteAgent.RemoteAgent) => Effect.Effect<{ readonly taskId: string; readonly text: string }>
  ) =>
    Effect.gen(function*() {
      let runs = 0
      let seats = 0
      const agent: AgentExecutor.Agent<Error, IdempotencyLedger.IdempotencyLedger> = (request) =>
        Effect.gen(function*() {
          runs++
          // Tool level: the seat of this trip, whichever task asks for it.
          yield* Effect.sync(() => ++seats).pipe(
            Idempotency.once(
              Idempotency.deriveKey({ contextId: request.contextId, operation: "reserve-seat", params: {} }),
              { success: Schema.Number }
            )
          )
          if (runs === 1) return yield* Effect.fail(new Error("payment service busy"))
          return AgentExecutor.completedText("booked")
        })
      const server = yield* A2AServer.make({
        agent,
        card: { name: "booking", description: "fails once, then books" },
        idempotency: {},
        afterExecute: AgentExecutor.failureHints(() => ({ retryable: true }))
      })
      const remote = yield* RemoteAgent.make({ name: "booking", url: server.url })
      const booked = yield* book(remote)
      expect(booked.text).toContain("booked")
      expect([runs, seats]).toEqual([2, 1])
      // The whole call again: the key finds the FAILED task, the retry's derived key the completed one.
      const again = yield* book(remote)
      expect(again.taskId).toBe(booked.taskId)
      expect([runs, seats]).toEqual([2, 1])
    }).pipe(Effect.provide(IdempotencyLedger.layerMemory({ pollInterval: "10 millis" })))

  it.scopedLive("a keyed send retried after FAILED is a new task: the agent runs twice, the seat is reserved once, and a repeat runs nothing", () =>
    bookTwice((remote) =>
      remote.send(input, options).pipe(
        RetryPolicy.retry(policy, { idempotent: true }),
        Effect.flatMap((outcome) =>
          outcome._tag === "Completed" ? Effect.succeed(outcome) : Effect.dieMessage(`not completed: ${outcome._tag}`)
        ),
        Effect.orDie
      )
    ))

  it.scopedLive("the same through GuardedRemoteAgent with retry: { retryFailed: true }, as its JSDoc combines them", () =>
    bookTwice((remote) =>
      GuardedRemoteAgent.make(remote, { retry: policy }).send(input, options).pipe(
        Effect.map((result) => ({ text: result.text, taskId: Option.getOrThrow(result.outcome).taskId }))
      )
    ))
})

describe("RetryPolicy.retryStream, against real servers", () => {
  const working = { id: "t-1", contextId: "c-1", status: { state: TaskState[TaskState.TASK_STATE_WORKING] } }
  const completedUpdate = {
    statusUpdate: { taskId: "t-1", contextId: "c-1", status: { state: TaskState[TaskState.TASK_STATE_COMPLETED] } }
  }
  /** Answers a streaming request with these JSON-RPC results (or errors) as SSE events, then ends. */
  const sse = (res: ServerResponse, body: string, events: ReadonlyArray<Record<string, unknown>>) => {
    res.writeHead(200, { "content-type": "text/event-stream" })
    for (const event of events) res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: rpcId(body), ...event })}\n\n`)
    res.end()
  }
  const serve = (res: ServerResponse, body: string) =>
    sse(res, body, [{ result: { task: working } }, { result: completedUpdate }])
  const streamed = (methods: ReadonlyArray<string>) =>
    methods.filter((method) => method === "SendStreamingMessage").length
  const finished = (events: Chunk.Chunk<RemoteEvent.RemoteEvent>) =>
    Option.map(Chunk.last(events), (event) => event._tag === "Finished" && event.outcome._tag)

  it.scopedLive("a stream refused with 429 and Retry-After is resent after it, and logs its retry at Debug as retry does", () =>
    Effect.gen(function*() {
      const arrivals: Array<number> = []
      const peer = yield* rawPeer((_req, res, body) => {
        arrivals.push(Date.now())
        if (arrivals.length === 1) {
          res.writeHead(429, { "retry-after": "1", "content-type": "text/plain" })
          return res.end("slow down")
        }
        serve(res, body)
      })
      const agent = yield* RemoteAgent.make({ name: "booking", url: peer.url })
      const { layer: capture, lines } = captureLogs()
      const events = yield* agent.stream("book").pipe(
        RetryPolicy.retryStream({ base: "10 millis" }, { idempotent: false }),
        Stream.runCollect,
        Logger.withMinimumLogLevel(LogLevel.Debug),
        Effect.provide(capture)
      )
      expect(finished(events)).toEqual(Option.some("Completed"))
      expect(streamed(peer.methods())).toBe(2)
      expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(950)
      const retries = lines.filter((line) => line.message.startsWith("attempt"))
      expect(retries).toMatchObject([{ level: "DEBUG", message: "attempt 1 failed (HttpStatus 429); retrying in 1s" }])
    }))

  it.scopedLive("a failure after the first event passes through unchanged, never resent, even with a key", () =>
    Effect.gen(function*() {
      // Cut after the first event; the stream's look at the task is cut too, so its error is the stream's own,
      // one that a keyed request would be resent after, were it before any event.
      const peer = yield* rawPeer((req, res, body) => {
        if (body.includes("GetTask")) return req.socket.destroy()
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(
          `data: ${JSON.stringify({ jsonrpc: "2.0", id: rpcId(body), result: { task: working } })}\n\n`,
          () => req.socket.destroy()
        )
      })
      const agent = yield* RemoteAgent.make({ name: "booking", url: peer.url })
      const seen: Array<RemoteEvent.RemoteEvent> = []
      const failure = yield* agent.stream("book", { idempotencyKey: "order-1" }).pipe(
        RetryPolicy.retryStream({ base: "10 millis" }, { idempotent: true }),
        Stream.runForEach((event) => Effect.sync(() => seen.push(event))),
        Effect.flip
      )
      expect(seen.map((event) => event._tag)).toEqual(["Status"])
      expect(failure).toMatchObject({ reason: "StreamInterrupted", delivery: "Unknown", taskId: "t-1" })
      expect(Option.isSome(RetryPolicy.retryReason(failure, { idempotent: true }))).toBe(true)
      expect(failure.attempts).toBeUndefined()
      expect(streamed(peer.methods())).toBe(1)
    }))

  it.scopedLive("NotSent (connection refused, then the server starts) is resent without a key", () =>
    Effect.gen(function*() {
      const url = yield* closedPort
      const agent = yield* RemoteAgent.make({ name: "booking", url, card: cardFor(`${url}/rpc`) })
      let peer: Peer | undefined
      // Starts the remote once the first attempt found nothing there, before the policy's delay.
      const refusedOnce = agent.stream("book").pipe(
        Stream.tapError((error) =>
          peer !== undefined
            ? Effect.void
            : Effect.map(
              rawPeer((_req, res, body) => serve(res, body), undefined, Number(new URL(url).port)),
              (started) => {
                expect(error).toMatchObject({ reason: "ConnectionRefused", delivery: "NotSent" })
                peer = started
              }
            )
        )
      )
      const events = yield* Stream.runCollect(
        RetryPolicy.retryStream(refusedOnce, { base: "10 millis" }, { idempotent: false })
      )
      expect(finished(events)).toEqual(Option.some("Completed"))
      expect(streamed(peer!.methods())).toBe(1)
    }))

  it.scopedLive("an Unknown failure before any event is resent only with idempotent: true, the same in both dual forms", () =>
    Effect.gen(function*() {
      const keys: Array<string | undefined> = []
      const peer = yield* rawPeer((req, res, body) => {
        keys.push(req.headers["idempotency-key"] as string | undefined)
        // Every other request is cut before its answer: received, maybe acted on, nothing said.
        if (keys.length % 2 === 1) return req.socket.destroy()
        serve(res, body)
      })
      const agent = yield* RemoteAgent.make({ name: "booking", url: peer.url })
      const options: RetryPolicy.StreamOptions = { base: "10 millis", maxAttempts: 3 }
      const forms = {
        pipeable: (
          stream: Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError>,
          request: RetryPolicy.Request
        ) => stream.pipe(RetryPolicy.retryStream(options, request)),
        dataFirst: (
          stream: Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError>,
          request: RetryPolicy.Request
        ) => RetryPolicy.retryStream(stream, options, request)
      }
      for (const [form, retried] of Object.entries(forms)) {
        keys.length = 0
        const failure = yield* Effect.flip(Stream.runDrain(retried(agent.stream("book"), { idempotent: false })))
        expect(failure, form).toMatchObject({ reason: "ConnectionLost", delivery: "Unknown", attempts: 1 })
        expect(keys, form).toEqual([undefined])
        keys.length = 0
        const key = `order-${form}`
        const events = yield* Stream.runCollect(
          retried(agent.stream("book", { idempotencyKey: key }), { idempotent: true })
        )
        expect(finished(events), form).toEqual(Option.some("Completed"))
        expect(keys, form).toEqual([key, key])
      }
    }))
})
