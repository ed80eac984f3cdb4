import { describe, expect, it } from "@effect/vitest"
import {
  Chunk,
  Config,
  ConfigError,
  ConfigProvider,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  HashMap,
  Layer,
  Logger,
  LogLevel,
  Metric,
  MetricState,
  Option,
  Redacted,
  Ref,
  Stream,
  Tracer
} from "effect"
import type * as Http from "node:http"
import * as zlib from "node:zlib"
import * as Part from "../src/Part.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import type * as RemoteEvent from "../src/RemoteEvent.js"
import * as RetryPolicy from "../src/RetryPolicy.js"
import {
  adkPythonDebugFailure,
  adkPythonErrorId,
  adkPythonFailure,
  cardFor,
  json,
  listen,
  peerErrorId,
  rawPeer,
  rpcId,
  sdkPeer
} from "./fixtures/peers.js"
import { captureLogs, untyped } from "./fixtures/serverAgents.js"

let agents = 0
/** A fresh agent name per test keeps the global metric counters apart. */
const agentFor = (url: string, options: Partial<RemoteAgent.Options> = {}) =>
  RemoteAgent.make({ name: `scripted-${++agents}`, url, timeout: "5 seconds", ...options })

const count = (name: string, tags: Record<string, string>) =>
  Effect.gen(function*() {
    const snapshot = yield* Metric.snapshot
    return snapshot
      .filter((pair) =>
        pair.metricKey.name === name &&
        Object.entries(tags).every(([k, v]) => pair.metricKey.tags.some((t) => t.key === k && t.value === v))
      )
      .reduce(
        (sum, pair) => sum + (MetricState.isCounterState(pair.metricState) ? Number(pair.metricState.count) : 0),
        0
      )
  })

/** A tracer that exports what `native` does, keeping every span it makes. */
const recordingTracer = (native: Tracer.Tracer) => {
  const spans: Array<Tracer.Span> = []
  const recording = Tracer.make({
    span: (...args) => {
      const span = native.span(...args)
      spans.push(span)
      return span
    },
    context: (f) => f()
  })
  return { recording, spans }
}

describe("RemoteAgent against an @a2a-js/sdk 1.3 peer", () => {
  it.scopedLive("each of the six endings is a typed outcome, counted per channel", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const agent = yield* agentFor(peer.url)
      const cases = [
        ["complete seat 12A", "Completed", "completed: seat 12A", "a2a.remote_completed"],
        ["fail", "Failed", `Agent execution failed. (error_id: ${peerErrorId})`, "a2a.remote_failed"],
        ["cancel", "Canceled", "", "a2a.remote_canceled"],
        ["reject too expensive", "Rejected", "too expensive", "a2a.remote_rejected"],
        ["input which seat?", "InputRequired", "which seat?", "a2a.remote_input_required"],
        ["auth", "AuthRequired", "please sign in", "a2a.remote_auth_required"]
      ] as const
      for (const [text, tag, statusText, metric] of cases) {
        const outcome = yield* agent.send(text)
        expect(outcome._tag).toBe(tag)
        expect(outcome.text).toBe(statusText)
        expect(outcome.agent).toBe(agent.name)
        expect(outcome.taskId).not.toBe("")
        expect(outcome.contextId).not.toBe("")
        expect(yield* count(metric, { agent: agent.name })).toBe(1)
      }
    }))

  it.scopedLive("Completed carries the artifacts", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      const outcome = yield* agent.send("complete seat 12A")
      expect(outcome.artifacts.map((a) => [a.artifactId, a.parts])).toEqual([["result", [{
        _tag: "Text",
        text: "seat 12A"
      }]]])
    }))

  it.scopedLive("Failed carries the error id and the decoded failure hint", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      const failed = yield* agent.send("fail-hint")
      expect(failed._tag).toBe("Failed")
      if (failed._tag !== "Failed") return
      expect(failed.errorId).toEqual(Option.some(peerErrorId))
      expect(Option.map(failed.hint, (h) => ({ ...h }))).toEqual(
        Option.some({ errorId: peerErrorId, retryable: true, contact: "payments-oncall" })
      )
      const badHint = yield* agent.send("fail-bad-hint")
      expect(badHint._tag === "Failed" && Option.isNone(badHint.hint)).toBe(true)
      expect(badHint._tag === "Failed" && Option.getOrNull(badHint.errorId)).toBe(peerErrorId)
    }))

  it.scopedLive("ADK Python's failure, with or without its debug suffix, is Failed with its eight-digit error id", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      for (
        const [command, text] of [["fail-adk-python", adkPythonFailure], [
          "fail-adk-python-debug",
          adkPythonDebugFailure
        ]] as const
      ) {
        const outcome = yield* agent.send(command)
        expect(outcome._tag).toBe("Failed")
        expect(outcome.text).toBe(text)
        expect(outcome._tag === "Failed" && outcome.errorId).toEqual(Option.some(adkPythonErrorId))
      }
    }))

  it.scopedLive("a FAILED task without a message is still a Failed outcome, with no error id", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      const outcome = yield* agent.send("fail-silent")
      expect(outcome._tag).toBe("Failed")
      expect(outcome.text).toBe("")
      expect(outcome._tag === "Failed" && Option.isNone(outcome.errorId)).toBe(true)
    }))

  it.scopedLive("every outcome and error is logged with taskId, contextId and errorId", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      const annotations: Array<Record<string, unknown>> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ annotations: a }) => annotations.push(Object.fromEntries(HashMap.toEntries(a))))
      )
      // Outcomes log at Debug, a FAILED one too.
      const outcome = yield* agent.send("fail").pipe(
        Effect.provide(capture),
        Logger.withMinimumLogLevel(LogLevel.Debug)
      )
      expect(annotations).toContainEqual(
        expect.objectContaining({
          taskId: outcome.taskId,
          contextId: outcome.contextId,
          errorId: peerErrorId,
          outcome: "Failed"
        })
      )
      expect(annotations.find((a) => a.outcome === "Failed")?.traceId).toMatch(/^[0-9a-f]{32}$/)
    }))

  it.scopedLive("the library is quiet by default: outcomes and failed calls log at Debug, failed calls at the level asked for", () =>
    Effect.gen(function*() {
      const { layer: capture, lines } = captureLogs()
      const failing = yield* agentFor((yield* sdkPeer()).url)
      const refusing = yield* rawPeer((_req, res, body) =>
        json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code: -32001, message: "no such task" } })
      )
      const quiet = yield* RemoteAgent.make({ name: "quiet", url: refusing.url })
      const calls = Effect.all([failing.send("fail"), Effect.either(quiet.send("x"))])
      yield* Effect.provide(calls, capture)
      expect(lines).toEqual([])
      yield* Effect.provide(calls, capture).pipe(Logger.withMinimumLogLevel(LogLevel.Debug))
      expect(lines.map((line) => line.level)).toEqual(["DEBUG", "DEBUG"])
      expect(lines[0]!.message).toContain("ended Failed")
      expect(lines[1]!.message).toContain("SendMessage failed")
      const loud = yield* RemoteAgent.make({ name: "loud", url: refusing.url, logLevel: LogLevel.Warning })
      yield* Effect.provide(Effect.either(loud.send("x")), capture)
      expect(lines.slice(2).map((line) => [line.level, line.message.startsWith("loud: SendMessage failed")])).toEqual([[
        "WARN",
        true
      ]])
    }))

  it.scopedLive("stream: progress, artifact chunks, then Finished", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(agent.stream("complete streamed")))
      expect(events.map((e) => e._tag)).toEqual(["Status", "Status", "Artifact", "Finished"])
      const last = events.at(-1) as RemoteEvent.Finished
      expect(last.outcome._tag).toBe("Completed")
      expect(last.outcome.artifacts[0]?.parts).toEqual([{ _tag: "Text", text: "streamed" }])
      expect((events[1] as RemoteEvent.Status).text).toBe("working")
      // The state as a literal, as RemoteOutcome.Running reads it.
      expect(events.filter((e): e is RemoteEvent.Status => e._tag === "Status").map((e) => e.state)).toEqual([
        "Submitted",
        "Working"
      ])
    }))

  it.scopedLive("resubscribe follows a task already sent to its end; an unknown task is a refusal", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      // The first event names the task; leaving the stream there leaves the task running (long enough for a loaded machine).
      const first = yield* Stream.runHead(agent.stream("sleep 1500"))
      const event = Option.getOrThrow(first)
      const taskId = event._tag === "Finished" ? event.outcome.taskId : event.taskId
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(agent.resubscribe(taskId)))
      const last = events.at(-1)
      expect(last?._tag === "Finished" && [last.outcome._tag, last.outcome.taskId, last.outcome.text]).toEqual([
        "Completed",
        taskId,
        "slept"
      ])
      const unknown = yield* Effect.flip(Stream.runDrain(agent.resubscribe("no-such-task")))
      expect(unknown).toMatchObject({
        operation: "SubscribeToTask",
        reason: "ProtocolError",
        protocolError: "TaskNotFound",
        delivery: "Refused"
      })
    }))

  it.scopedLive("stream of a failing task ends with Finished(Failed), not an error", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      const last = yield* Stream.runLast(agent.stream("fail"))
      const finished = Option.getOrThrow(last)
      expect(finished._tag === "Finished" && finished.outcome._tag).toBe("Failed")
    }))

  it.scopedLive("a message that is not JSON data, or a header HTTP cannot carry, is never sent: InvalidRequest, NotSent, counted, not retried", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const agent = yield* agentFor(peer.url)
      const before = peer.requests()
      const unsendable = "cannot be sent (it holds a control character other than tab, or a character beyond Latin-1)"
      const inputs: ReadonlyArray<readonly [RemoteAgent.Input, RemoteAgent.CallOptions | undefined, string]> = [
        [
          { parts: [Part.DataPart.make({ data: untyped({ total: 10n }) })] },
          undefined,
          "the message is not JSON data at parts[0].data.total: a bigint"
        ],
        [
          { parts: [Part.TextPart.make({ text: "hi" })], metadata: { callback: untyped(() => 1) } },
          undefined,
          "the message is not JSON data at metadata.callback: a function"
        ],
        [
          { parts: [Part.DataPart.make({ data: untyped(new Map([[1, 2]])) })], contextId: "ctx-1" },
          undefined,
          "the message is not JSON data at parts[0].data: a Map"
        ],
        [
          "hi",
          { idempotencyKey: "ключ" },
          `the idempotency key ${unsendable.replace("cannot be sent", "cannot be sent as a header")}`
        ],
        ["hi", { idempotencyKey: " k1" }, "the idempotency key starts or ends with a space or a tab"],
        ["hi", { headers: { "x-user": "a\r\nb" } }, `the value of the call's header x-user ${unsendable}`],
        // Control characters fetch refuses before sending, which once read as a request that may have left.
        ["hi", { headers: { "x-user": "a\u0001b" } }, `the value of the call's header x-user ${unsendable}`],
        [
          "hi",
          { idempotencyKey: "k\u007f" },
          `the idempotency key ${unsendable.replace("cannot be sent", "cannot be sent as a header")}`
        ],
        ["hi", { headers: { "bad header": "x" } }, `the call's header name "bad header" is not an HTTP token`]
      ]
      for (const [input, options, detail] of inputs) {
        const sent = yield* Effect.flip(agent.send(input, options))
        const streamed = yield* Effect.flip(Stream.runDrain(agent.stream(input, options)))
        for (const error of [sent, streamed]) {
          expect(error.reason).toBe("InvalidRequest")
          expect(error.delivery).toBe("NotSent")
          expect(error.detail).toBe(detail)
          expect(Option.isNone(RetryPolicy.retryReason(error, { idempotent: true }))).toBe(true)
        }
        expect(sent.operation).toBe("SendMessage")
        expect(streamed.operation).toBe("SendStreamingMessage")
      }
      // getTask and cancel check their headers too, and so does every call of an agent with a bad header of its own.
      const badHeader = { headers: { "x-user": "ключ" } }
      for (
        const error of [
          yield* Effect.flip(agent.getTask("t1", badHeader)),
          yield* Effect.flip(agent.cancel("t1", badHeader))
        ]
      ) {
        expect([error.reason, error.delivery, error.taskId]).toEqual(["InvalidRequest", "NotSent", "t1"])
      }
      const misconfigured = yield* agentFor(peer.url, {
        card: cardFor(`${peer.url}/a2a/jsonrpc`),
        headers: { "x-tenant": "a\nb" }
      })
      const refused = yield* Effect.flip(misconfigured.send("hi"))
      expect([refused.reason, refused.detail]).toEqual([
        "InvalidRequest",
        `the value of the agent's header x-tenant ${unsendable}`
      ])
      expect(peer.requests()).toBe(before)
      expect(yield* count("a2a.client_error", { agent: agent.name, reason: "InvalidRequest" })).toBe(
        inputs.length * 2 + 2
      )
    }))

  it.scopedLive("getTask and cancel give typed views", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      const done = yield* agent.send("complete x")
      expect((yield* agent.getTask(done.taskId))._tag).toBe("Completed")
      const notCancelable = yield* Effect.flip(agent.cancel(done.taskId))
      expect(notCancelable).toMatchObject({ reason: "ProtocolError", code: -32002, protocolError: "TaskNotCancelable" })
      const unknown = yield* Effect.flip(agent.getTask("no-such-task"))
      expect(unknown).toMatchObject({ reason: "ProtocolError", code: -32001, protocolError: "TaskNotFound" })
    }))

  it.scopedLive("cancel of a running task ends it CANCELED", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      const first = yield* Stream.take(agent.stream("sleep 5000"), 1).pipe(
        Stream.runHead,
        Effect.map(Option.getOrThrow)
      )
      expect(first._tag).toBe("Status")
      const taskId = first._tag === "Status" ? first.taskId : ""
      const view = yield* agent.cancel(taskId)
      expect(view._tag).toBe("Canceled")
      expect((yield* agent.getTask(taskId))._tag).toBe("Canceled")
    }))

  it.scopedLive("a blocking send answered with a WORKING task polls it until it ends", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const agent = yield* agentFor(peer.url)
      const outcome = yield* agent.send("working 300")
      expect(outcome).toMatchObject({ _tag: "Completed", text: "finished later" })
      expect(peer.methods()[0]).toBe("SendMessage")
      expect(peer.methods().slice(1).length).toBeGreaterThan(0)
      expect(new Set(peer.methods().slice(1))).toEqual(new Set(["GetTask"]))
    }))

  it.scopedLive("a stream whose turn ends with the task WORKING polls it until it ends, as a send does", () =>
    Effect.gen(function*() {
      // With a card without streaming, the SDK sends the stream as one blocking call: the same ending.
      for (const streaming of [true, false]) {
        const peer = yield* sdkPeer({ streaming })
        const agent = yield* agentFor(peer.url)
        const last = yield* Stream.runLast(agent.stream("working 300")).pipe(Effect.map(Option.getOrThrow))
        expect(last).toMatchObject({ _tag: "Finished", outcome: { _tag: "Completed", text: "finished later" } })
        expect(peer.methods()[0]).toBe(streaming ? "SendStreamingMessage" : "SendMessage")
        expect(new Set(peer.methods().slice(1))).toEqual(new Set(["GetTask"]))
        expect(yield* count("a2a.remote_completed", { agent: agent.name })).toBe(1)
        expect(yield* count("a2a.client_error", { agent: agent.name })).toBe(0)
      }
    }))

  it.scopedLive("a task that does not end within the call's time fails with Timeout, delivery Unknown", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const agent = yield* agentFor(peer.url)
      const error = yield* Effect.flip(agent.send("working 10000", { timeout: "400 millis" }))
      expect(error).toMatchObject({ reason: "Timeout", delivery: "Unknown", operation: "SendMessage" })
      expect(error.taskId).toBeDefined()
      expect(error.detail).toContain("did not end within 400ms")
      // Polled, and no more once the time was up.
      const polls = peer.methods().filter((method) => method === "GetTask").length
      expect(polls).toBeGreaterThan(0)
      yield* Effect.sleep("300 millis")
      expect(peer.methods().filter((method) => method === "GetTask").length).toBe(polls)
    }))

  it.scopedLive("interrupting a send while it polls stops the polling and counts no error", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const agent = yield* agentFor(peer.url)
      const fiber = yield* Effect.fork(agent.send("working 10000"))
      yield* Effect.sleep("300 millis")
      expect(peer.methods()).toContain("GetTask")
      const exit = yield* Fiber.interrupt(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      const polls = peer.methods().length
      yield* Effect.sleep("300 millis")
      expect(peer.methods()).toHaveLength(polls)
      expect(yield* count("a2a.client_error", { agent: agent.name })).toBe(0)
    }))

  it.scopedLive("with a tracer that exports spans: a client span per call, ended on success, failure and interruption", () =>
    Effect.gen(function*() {
      const { recording, spans } = recordingTracer(yield* Effect.tracer)
      const peer = yield* sdkPeer()
      const agent = yield* agentFor(peer.url)
      yield* Effect.gen(function*() {
        const done = yield* agent.send("complete x")
        yield* Effect.flip(agent.getTask("no-such-task"))
        const fiber = yield* Effect.fork(agent.send("sleep 5000"))
        yield* Effect.sleep("200 millis")
        yield* Fiber.interrupt(fiber)
        const calls = spans.filter((span) => span.name !== "caller")
        const [send, getTask, interrupted] = calls
        expect(calls.map((span) => [span.name, span.kind])).toEqual([
          ["RemoteAgent.SendMessage", "client"],
          ["RemoteAgent.GetTask", "client"],
          ["RemoteAgent.SendMessage", "client"]
        ])
        expect(Object.fromEntries(send!.attributes)).toEqual({
          "a2a.agent": agent.name,
          "a2a.transport": "JSONRPC",
          "a2a.task_id": done.taskId,
          "a2a.outcome": "Completed"
        })
        for (const span of calls) {
          expect(span.parent).toEqual(Option.some(expect.objectContaining({ name: "caller" })))
          expect(span.status._tag).toBe("Ended")
        }
        const exitOf = (span: Tracer.Span | undefined) => span?.status._tag === "Ended" ? span.status.exit : undefined
        expect(Exit.isSuccess(exitOf(send)!)).toBe(true)
        expect(Exit.isFailure(exitOf(getTask)!)).toBe(true)
        expect(Exit.isInterrupted(exitOf(interrupted)!)).toBe(true)
      }).pipe(Effect.withSpan("caller"), Effect.withTracer(recording))
    }))

  it.scopedLive("a v0.3 peer (the SDK's legacy compat server) works through the compat transport", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer({ legacy: true })
      const agent = yield* agentFor(peer.url)
      const outcome = yield* agent.send("reject too expensive")
      expect(outcome._tag).toBe("Rejected")
      expect(outcome.text).toBe("too expensive")
      expect(peer.methods()).toContain("message/send")
      expect((yield* agent.send("fail"))._tag).toBe("Failed")
    }))

  it.scopedLive("the agent's headers go with the card and every call; a call's own headers win over them", () =>
    Effect.gen(function*() {
      const seen: Array<
        { readonly method: string; readonly auth: unknown; readonly tenant: unknown; readonly key: unknown }
      > = []
      const record = (req: { readonly method?: string | undefined; readonly headers: Record<string, unknown> }) =>
        seen.push({
          method: req.method ?? "",
          auth: req.headers.authorization,
          tenant: req.headers["x-tenant"],
          key: req.headers["idempotency-key"]
        })
      const peer = yield* rawPeer(
        (req, res, body) => {
          record(req)
          json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code: -32001, message: "no" } })
        },
        (req, res, base) => {
          record(req)
          json(res, 200, cardFor(`${base}/rpc`))
        }
      )
      const agent = yield* agentFor(peer.url, { headers: { authorization: "Bearer agent", "x-tenant": "acme" } })
      yield* Effect.ignore(agent.getTask("t"))
      yield* Effect.ignore(agent.getTask("t", { headers: { authorization: "Bearer call" }, idempotencyKey: "k-1" }))
      yield* Effect.ignore(Stream.runDrain(agent.stream("go")))
      // Names differ only in case: one header each, the call's value; the key option over the call's header.
      yield* Effect.ignore(
        agent.getTask("t", {
          headers: { Authorization: "Bearer call", "IDEMPOTENCY-KEY": "k-0" },
          idempotencyKey: "k-2"
        })
      )
      const shouting = yield* agentFor(peer.url, { headers: { AUTHORIZATION: "Bearer agent", "X-Tenant": "acme" } })
      yield* Effect.ignore(shouting.getTask("t", { headers: { authorization: "Bearer call" } }))
      expect(seen).toEqual([
        { method: "GET", auth: "Bearer agent", tenant: "acme", key: undefined },
        { method: "POST", auth: "Bearer agent", tenant: "acme", key: undefined },
        { method: "POST", auth: "Bearer call", tenant: "acme", key: "k-1" },
        { method: "POST", auth: "Bearer agent", tenant: "acme", key: undefined },
        { method: "POST", auth: "Bearer call", tenant: "acme", key: "k-2" },
        { method: "GET", auth: "Bearer agent", tenant: "acme", key: undefined },
        { method: "POST", auth: "Bearer call", tenant: "acme", key: undefined }
      ])
    }))

  it.scopedLive("a call's content-type or a2a-version header in any case does not join the SDK's own", () =>
    Effect.gen(function*() {
      const agent = yield* agentFor((yield* sdkPeer()).url)
      const headers = { "content-type": "application/json", "A2A-VERSION": "0.3", Accept: "text/plain" }
      expect((yield* agent.send("complete x", { headers }))._tag).toBe("Completed")
    }))

  it.scopedLive("the request carries traceparent of the caller's trace", () =>
    Effect.gen(function*() {
      const seen: Array<string | undefined> = []
      const peer = yield* rawPeer((req, res, body) => {
        seen.push(req.headers.traceparent as string | undefined)
        json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code: -32001, message: "no" } })
      })
      const agent = yield* agentFor(peer.url)
      const traceId = yield* Effect.gen(function*() {
        yield* Effect.ignore(agent.getTask("t"))
        yield* Effect.ignore(Stream.runDrain(agent.stream("go")))
        return (yield* Effect.currentSpan).traceId
      }).pipe(Effect.withSpan("orchestrator"))
      expect(seen).toHaveLength(2)
      for (const header of seen) expect(header).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))
      // Outside any span each call starts a trace of its own.
      yield* Effect.ignore(agent.getTask("t"))
      yield* Effect.ignore(agent.getTask("t"))
      const [first, second] = seen.slice(2)
      for (const header of [first, second]) expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
      expect(first!.slice(3, 35)).not.toBe(second!.slice(3, 35))
      expect(first!.slice(3, 35)).not.toBe(traceId)
      // With tracing off there is no trace to join: no header, for a stream (whose span is a placeholder) too.
      yield* Effect.ignore(agent.getTask("t")).pipe(Effect.withTracerEnabled(false))
      yield* Effect.ignore(Stream.runDrain(agent.stream("go"))).pipe(Effect.withTracerEnabled(false))
      expect(seen.slice(4)).toEqual([undefined, undefined])
      // Nor for the task lookup of a stream cut after its first event.
      const headers: Array<string | undefined> = []
      const cutting = yield* rawPeer((req, res, body) => {
        headers.push(req.headers.traceparent as string | undefined)
        const rpc = JSON.parse(body) as { id: number; method: string }
        const task = {
          id: "t1",
          contextId: "c1",
          status: { state: rpc.method === "GetTask" ? "TASK_STATE_COMPLETED" : "TASK_STATE_WORKING" }
        }
        if (rpc.method === "GetTask") return json(res, 200, { jsonrpc: "2.0", id: rpc.id, result: task })
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: rpc.id, result: { task } })}\n\n`, () =>
          req.socket.destroy())
      })
      const recovered = yield* Stream.runLast((yield* agentFor(cutting.url)).stream("go")).pipe(
        Effect.withTracerEnabled(false)
      )
      expect(Option.map(recovered, (event) =>
        event._tag)).toEqual(Option.some("Finished"))
      expect(headers).toEqual([undefined, undefined])
    }))
})

describe("RemoteAgent at the edges: long timeouts, compressed bodies, redirects, polling and cut streams", () => {
  const task = (id: string, state: string, extra: Record<string, unknown> = {}) => ({
    task: {
      id,
      contextId: "c1",
      status: { state, message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: "done" }] } },
      ...extra
    }
  })

  it.scopedLive("a status arriving as a task snapshot keeps all its parts, as a status update does; getTask too", () =>
    Effect.gen(function*() {
      const message = { messageId: "m1", role: "ROLE_AGENT", parts: [{ text: "step 1" }, { data: { progress: 0.5 } }] }
      const working = { id: "t1", contextId: "c1", status: { state: "TASK_STATE_WORKING", message } }
      const peer = yield* rawPeer((_req, res, body) => {
        const id = rpcId(body)
        if (body.includes("GetTask")) return json(res, 200, { jsonrpc: "2.0", id, result: working })
        res.writeHead(200, { "content-type": "text/event-stream" })
        const events = [
          { task: working },
          { statusUpdate: { taskId: "t1", contextId: "c1", status: working.status } },
          { statusUpdate: { taskId: "t1", contextId: "c1", status: { state: "TASK_STATE_COMPLETED" } } }
        ]
        for (const result of events) res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id, result })}\n\n`)
        res.end()
      })
      const agent = yield* agentFor(peer.url)
      const expected = [Part.TextPart.make({ text: "step 1" }), Part.DataPart.make({ data: { progress: 0.5 } })]
      const statuses = Chunk.toReadonlyArray(yield* Stream.runCollect(agent.stream("go"))).filter((event) =>
        event._tag === "Status"
      )
      expect(statuses.map((status) => status.parts)).toEqual([expected, expected])
      const running = yield* agent.getTask("t1")
      expect(running._tag === "Running" && running.parts).toEqual(expected)
    }))

  it.scopedLive("an answer about another task is not taken for the one asked about, by getTask or a send's polling", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res, body) => {
        const id = rpcId(body)
        if (body.includes("GetTask")) {
          return json(res, 200, { jsonrpc: "2.0", id, result: task("t-other", "TASK_STATE_COMPLETED").task })
        }
        json(res, 200, { jsonrpc: "2.0", id, result: task("t1", "TASK_STATE_WORKING") })
      })
      const agent = yield* agentFor(peer.url)
      const read = yield* Effect.flip(agent.getTask("t1"))
      expect(read).toMatchObject({ reason: "InvalidResponse", operation: "GetTask", taskId: "t1" })
      expect(read.detail).toContain("about task t-other")
      const sent = yield* Effect.flip(agent.send("go"))
      expect(sent).toMatchObject({
        reason: "InvalidResponse",
        operation: "SendMessage",
        delivery: "Unknown",
        taskId: "t1"
      })
    }))

  it.scopedLive("a timeout beyond what a timer holds, or an infinite one, still waits for the answer", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res, body) => {
        setTimeout(
          () => json(res, 200, { jsonrpc: "2.0", id: rpcId(body), result: task("t1", "TASK_STATE_COMPLETED") }),
          100
        )
      })
      for (const timeout of [Duration.infinity, Duration.days(30)]) {
        const agent = yield* agentFor(peer.url, { timeout, cardTimeout: timeout })
        expect((yield* agent.send("hi"))._tag).toBe("Completed")
        expect((yield* (yield* agentFor(peer.url)).send("hi", { timeout }))._tag).toBe("Completed")
      }
    }))

  it.scopedLive("maxResponseBytes counts a compressed body as it decodes", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res, body) => {
        const payload = JSON.stringify({
          jsonrpc: "2.0",
          id: rpcId(body),
          result: task("t1", "TASK_STATE_COMPLETED", {
            artifacts: [{ artifactId: "a", parts: [{ text: "x".repeat(1 << 20) }] }]
          })
        })
        const compressed = zlib.gzipSync(payload)
        res.writeHead(200, {
          "content-type": "application/json",
          "content-encoding": "gzip",
          "content-length": compressed.length
        })
        res.end(compressed)
      })
      const agent = yield* agentFor(peer.url, { maxResponseBytes: 64 * 1024 })
      const result = yield* Effect.either(agent.send("hi"))
      // Checked field by field: a failing comparison with the accepted megabyte would print it.
      expect(result._tag).toBe("Left")
      const error = Either.getLeft(result).pipe(Option.getOrThrow)
      expect([error.reason, error.delivery]).toEqual(["InvalidResponse", "Unknown"])
      expect(error.detail).toContain("exceeds 65536 bytes")
    }))

  it.scopedLive("a redirect is an HTTP answer, not a request that never left: not resent without a key", () =>
    Effect.gen(function*() {
      const closed = yield* listen(() => undefined)
      const peer = yield* rawPeer((_req, res) => {
        res.writeHead(307, { location: `${closed.url}/rpc` })
        res.end()
      })
      const agent = yield* agentFor(peer.url)
      const error = yield* Effect.flip(
        agent.send("book").pipe(RetryPolicy.retry({ maxAttempts: 3, base: "10 millis" }, { idempotent: false }))
      )
      expect(error).toMatchObject({ reason: "HttpStatus", delivery: "Unknown", attempts: 1 })
      expect(error.detail).toContain("answered with a redirect (HTTP 3xx), which is not followed")
      expect(peer.methods()).toEqual(["SendMessage"])
      expect(closed.requests()).toBe(0)
      // The same for a stream: an answer, not a cut stream.
      const streamed = yield* Effect.flip(Stream.runDrain(agent.stream("book")))
      expect(streamed).toMatchObject({ reason: "HttpStatus", delivery: "Unknown" })
      expect(closed.requests()).toBe(0)
    }))

  it.scopedLive("a refused poll of an accepted task is not a refusal of the message: it is not resent", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res, body) => {
        if ((JSON.parse(body) as { method: string }).method === "SendMessage") {
          return json(res, 200, { jsonrpc: "2.0", id: rpcId(body), result: task("t1", "TASK_STATE_WORKING") })
        }
        res.writeHead(503, { "retry-after": "0" })
        res.end("busy")
      })
      const agent = yield* agentFor(peer.url)
      const error = yield* Effect.flip(
        agent.send("charge").pipe(RetryPolicy.retry({ maxAttempts: 3, base: "10 millis" }, { idempotent: false }))
      )
      expect(error).toMatchObject({ operation: "SendMessage", delivery: "Unknown", taskId: "t1", attempts: 1 })
      expect(error.status).toBeUndefined()
      expect(peer.methods()).toEqual(["SendMessage", "GetTask"])
    }))

  it.scopedLive("a stream cut before its first event is an error, even when it continues a task; a bad event is InvalidResponse", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((req, res, body) => {
        const rpc = JSON.parse(body) as {
          id: number
          method: string
          params: { message?: { parts?: Array<{ text?: string }> } }
        }
        if (rpc.method === "GetTask") {
          return json(res, 200, { jsonrpc: "2.0", id: rpc.id, result: task("t1", "TASK_STATE_INPUT_REQUIRED").task })
        }
        if (rpc.params.message?.parts?.[0]?.text === "cut") return req.socket.destroy()
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(
          `data: ${JSON.stringify({ jsonrpc: "2.0", id: rpc.id, result: task("t1", "TASK_STATE_WORKING") })}\n\n`
        )
        res.end(
          `data: ${
            JSON.stringify({
              jsonrpc: "2.0",
              id: rpc.id,
              result: {
                artifactUpdate: { taskId: "t1", contextId: "c1", artifact: { artifactId: "a", parts: [null] } }
              }
            })
          }\n\n`
        )
      })
      const agent = yield* agentFor(peer.url)
      const cut = yield* Effect.flip(
        Stream.runDrain(agent.stream({ parts: [Part.TextPart.make({ text: "cut" })], taskId: "t1" }))
      )
      expect(cut).toMatchObject({ reason: "ConnectionLost", delivery: "Unknown" })
      const garbled = yield* Effect.flip(Stream.runDrain(agent.stream("garbled")))
      expect(garbled).toMatchObject({ reason: "InvalidResponse", delivery: "Unknown" })
      expect(peer.methods()).not.toContain("GetTask")
    }))

  it.scopedLive("a stream joins an artifact's chunks as the peer's store does; an event of another task, or a v0.3 event the SDK refuses, is InvalidResponse", () =>
    Effect.gen(function*() {
      // Each peer streams a WORKING task, the events its message names, then COMPLETED.
      const v03 = {
        started: { kind: "task", id: "t1", contextId: "c1", status: { state: "working" } },
        done: { kind: "status-update", taskId: "t1", contextId: "c1", final: true, status: { state: "completed" } }
      }
      const v10 = {
        started: task("t1", "TASK_STATE_WORKING"),
        done: { statusUpdate: { taskId: "t1", contextId: "c1", status: { state: "TASK_STATE_COMPLETED" } } }
      }
      const chunk = (taskId: string, artifact: object, append: boolean) => ({
        artifactUpdate: { taskId, contextId: "c1", artifact, append, lastChunk: !append }
      })
      const scenarios: Record<string, ReadonlyArray<object>> = {
        named: [
          chunk("t1", { artifactId: "a", parts: [{ text: "p1" }] }, false),
          chunk("t1", { artifactId: "a", name: "report.txt", parts: [{ text: "p2" }] }, true)
        ],
        other: [
          chunk("t1", { artifactId: "a", parts: [{ text: "mine" }] }, false),
          chunk("t2", { artifactId: "b", parts: [{ text: "theirs" }] }, false)
        ],
        weird: [{
          kind: "artifact-update",
          taskId: "t1",
          contextId: "c1",
          artifact: { artifactId: "a", parts: [{ kind: "weird" }] }
        }]
      }
      const sse =
        (events: { started: object; done: object }) => (_req: unknown, res: Http.ServerResponse, body: string) => {
          const rpc = JSON.parse(body) as { id: number; params: { message: { parts: Array<{ text: string }> } } }
          res.writeHead(200, { "content-type": "text/event-stream" })
          for (const result of [events.started, ...(scenarios[rpc.params.message.parts[0]!.text] ?? []), events.done]) {
            res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: rpc.id, result })}\n\n`)
          }
          res.end()
        }
      const peer = yield* rawPeer(sse(v10))
      const agent = yield* agentFor(peer.url)
      const named = yield* Stream.runCollect(agent.stream("named"))
      const last = Chunk.last(named).pipe(Option.getOrThrow)
      expect(last._tag === "Finished" && last.outcome._tag === "Completed" ? last.outcome.artifacts : undefined)
        .toMatchObject([
          { artifactId: "a", name: "report.txt", parts: [{ text: "p1" }, { text: "p2" }] }
        ])
      const other = yield* Effect.flip(Stream.runDrain(agent.stream("other")))
      expect(other).toMatchObject({ reason: "InvalidResponse", delivery: "Unknown", taskId: "t1" })
      expect(other.detail).toContain("an event of task t2 in the stream of task t1")

      const legacy = yield* rawPeer(sse(v03), (_req, res, base) =>
        json(res, 200, {
          protocolVersion: "0.3.0",
          name: "legacy",
          description: "v0.3",
          url: `${base}/rpc`,
          preferredTransport: "JSONRPC",
          version: "1",
          capabilities: { streaming: true },
          defaultInputModes: ["text/plain"],
          defaultOutputModes: ["text/plain"],
          skills: []
        }))
      const legacyAgent = yield* agentFor(legacy.url)
      const weird = yield* Effect.flip(Stream.runDrain(legacyAgent.stream("weird")))
      expect(weird).toMatchObject({ reason: "InvalidResponse", delivery: "Unknown" })
      // A bad event is not a cut stream: nothing to recover with a GetTask.
      expect(legacy.methods()).toEqual(["message/stream"])
    }))
})

describe("RemoteAgent headers: computed per call, Redacted", () => {
  /** A peer that records the authorization and x-call headers of the card request and of every call. */
  const recordingPeer = () =>
    Effect.gen(function*() {
      const seen: Array<readonly [string, unknown, unknown]> = []
      const record = (req: { readonly method?: string | undefined; readonly headers: Record<string, unknown> }) =>
        seen.push([req.method ?? "", req.headers.authorization, req.headers["x-call"]])
      const peer = yield* rawPeer(
        (req, res, body) => {
          record(req)
          json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code: -32001, message: "no such task" } })
        },
        (req, res, base) => {
          record(req)
          json(res, 200, cardFor(`${base}/rpc`))
        }
      )
      return { ...peer, seen }
    })

  it.scopedLive("an Effect of headers runs once for the card and before every call; a call's own headers win, Redacted ones included", () =>
    Effect.gen(function*() {
      const peer = yield* recordingPeer()
      const issued = yield* Ref.make(0)
      const token = Effect.map(
        Ref.getAndUpdate(issued, (n) => n + 1),
        (n) => ({ Authorization: Redacted.make(`Bearer t${n}`) })
      )
      const agent = yield* agentFor(peer.url, { headers: token })
      yield* Effect.flip(agent.getTask("t"))
      yield* Effect.flip(agent.getTask("t", { headers: { "x-call": Redacted.make("call-secret") } }))
      yield* Effect.flip(Stream.runDrain(agent.stream("go")))
      yield* Effect.flip(agent.cancel("t", { headers: { authorization: Redacted.make("Bearer call") } }))
      expect(peer.seen).toEqual([
        ["GET", "Bearer t0", undefined],
        ["POST", "Bearer t1", undefined],
        ["POST", "Bearer t2", "call-secret"],
        ["POST", "Bearer t3", undefined],
        ["POST", "Bearer call", undefined]
      ])
      expect(yield* Ref.get(issued)).toBe(5)
    }))

  it.scopedLive("a static record's Redacted values are sent, with no Effect run per call", () =>
    Effect.gen(function*() {
      const peer = yield* recordingPeer()
      const agent = yield* agentFor(peer.url, { headers: { authorization: Redacted.make("Bearer static") } })
      yield* Effect.flip(agent.getTask("t"))
      expect(peer.seen).toEqual([["GET", "Bearer static", undefined], ["POST", "Bearer static", undefined]])
    }))

  it.scopedLive("headers that fail or die to be computed: the call is InvalidRequest, NotSent, counted, and nothing leaves; at the card, start-up fails", () =>
    Effect.gen(function*() {
      const peer = yield* recordingPeer()
      const mode = yield* Ref.make<"ok" | "fail" | "die" | "bad">("ok")
      const headers = Effect.flatMap(Ref.get(mode), (m) =>
        m === "fail"
          ? Effect.fail(new Error("token service down: s3cr3t"))
          : m === "die"
          ? Effect.die("s3cr3t")
          : Effect.succeed({ authorization: m === "bad" ? "Bearer \n" : "Bearer ok" }))
      const agent = yield* agentFor(peer.url, { headers })
      yield* Ref.set(mode, "fail")
      const failed = yield* Effect.flip(agent.send("book"))
      expect(failed).toMatchObject({
        reason: "InvalidRequest",
        delivery: "NotSent",
        operation: "SendMessage",
        transport: "JSONRPC"
      })
      expect(failed.detail).toContain("the agent's headers could not be computed")
      expect(JSON.stringify(failed)).not.toContain("s3cr3t")
      yield* Ref.set(mode, "die")
      const died = yield* Effect.flip(Stream.runDrain(agent.stream("book")))
      expect(died).toMatchObject({
        reason: "InvalidRequest",
        delivery: "NotSent",
        operation: "SendStreamingMessage",
        transport: "JSONRPC"
      })
      expect(JSON.stringify(died)).not.toContain("s3cr3t")
      // The checks of what can be sent apply to the computed values.
      yield* Ref.set(mode, "bad")
      const bad = yield* Effect.flip(agent.getTask("t"))
      expect(bad).toMatchObject({ reason: "InvalidRequest", delivery: "NotSent" })
      expect(bad.detail).toContain("the agent's header authorization cannot be sent")
      expect(yield* count("a2a.client_error", { agent: agent.name, reason: "InvalidRequest" })).toBe(3)
      // Only the card went out.
      expect(peer.seen).toEqual([["GET", "Bearer ok", undefined]])
      yield* Ref.set(mode, "fail")
      const startUp = yield* Effect.flip(agentFor(peer.url, { headers }))
      expect(startUp).toMatchObject({ reason: "InvalidRequest" })
      expect(startUp.message).toContain("the agent's headers could not be computed")
      expect(startUp.message).not.toContain("s3cr3t")
      expect(peer.seen).toHaveLength(1)
    }))

  it.scopedLive("a Redacted secret reaches the server but never a log line, an error or a span, at Debug and at the logLevel asked for", () =>
    Effect.gen(function*() {
      const secret = "s3cr3t-token-value"
      const received: Array<unknown> = []
      const peer = yield* rawPeer((req, res, body) => {
        received.push(req.headers.authorization, req.headers["x-api-key"])
        json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code: -32001, message: "no such task" } })
      })
      const { recording, spans } = recordingTracer(yield* Effect.tracer)
      const { layer: capture, lines } = captureLogs()
      const calls = Effect.gen(function*() {
        const computed = yield* agentFor(peer.url, {
          headers: Effect.succeed({ authorization: Redacted.make(`Bearer ${secret}`) }),
          logLevel: LogLevel.Warning
        })
        const fixed = yield* agentFor(peer.url, {
          headers: { authorization: Redacted.make(`Bearer ${secret}`) },
          logLevel: LogLevel.Warning
        })
        const errors = [
          yield* Effect.flip(computed.getTask("t", { headers: { "x-api-key": Redacted.make(secret) } })),
          yield* Effect.flip(fixed.send("book", { headers: { "x-api-key": Redacted.make(secret) } })),
          yield* Effect.flip(Stream.runDrain(fixed.stream("book")))
        ]
        return errors
      })
      const errors = yield* calls.pipe(
        Effect.withSpan("caller"),
        Effect.withTracer(recording),
        Effect.provide(capture),
        Logger.withMinimumLogLevel(LogLevel.Debug)
      )
      expect(received).toEqual([`Bearer ${secret}`, secret, `Bearer ${secret}`, secret, `Bearer ${secret}`, undefined])
      expect(lines.filter((line) => line.level === "WARN")).toHaveLength(3)
      expect(JSON.stringify(lines)).not.toContain(secret)
      for (const error of errors) {
        expect(`${JSON.stringify(error)} ${error.message} ${String(error)}`).not.toContain(secret)
      }
      expect(spans.length).toBeGreaterThan(1)
      expect(JSON.stringify(spans.map((span) => [span.name, Object.fromEntries(span.attributes)]))).not.toContain(
        secret
      )
    }))
})

describe("RemoteAgent.layerConfig", () => {
  it.scopedLive("reads url, name and timeout through Config; a missing setting is a ConfigError, before any request", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const config = {
        name: Config.string("NAME").pipe(Config.withDefault("booking")),
        url: Config.string("URL"),
        timeout: Config.duration("TIMEOUT")
      }
      const provider = ConfigProvider.fromMap(
        new Map([["URL", peer.url], ["NAME", "from-config"], ["TIMEOUT", "300 millis"]])
      )
      const agent = yield* Effect.provide(
        RemoteAgent.RemoteAgent,
        RemoteAgent.layerConfig(config).pipe(Layer.provide(Layer.setConfigProvider(provider)))
      )
      expect(agent.name).toBe("from-config")
      expect(agent.url).toBe(peer.url)
      expect((yield* agent.send("complete seat 3C"))._tag).toBe("Completed")
      // The timeout read from the config holds: a task that outlives it fails in time.
      const slow = yield* Effect.flip(agent.send("sleep 5000"))
      expect(slow).toMatchObject({ reason: "Timeout", agent: "from-config" })
      const requests = peer.requests()
      const missing = yield* Effect.flip(
        Effect.provide(
          RemoteAgent.RemoteAgent,
          RemoteAgent.layerConfig(config).pipe(
            Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["NAME", "x"]]))))
          )
        )
      )
      expect(ConfigError.isConfigError(missing)).toBe(true)
      expect(String(missing)).toContain("URL")
      expect(peer.requests()).toBe(requests)
    }))
})
