import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { describe, expect, it } from "@effect/vitest"
import { SpanKind, SpanStatusCode } from "@opentelemetry/api"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Data, Effect, Layer, Logger, LogLevel, Metric, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as GuardedRemoteAgent from "../src/GuardedRemoteAgent.js"
import * as Observability from "../src/Observability.js"
import * as Orchestrator from "../src/Orchestrator.js"
import * as Part from "../src/Part.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import type * as RemoteOutcome from "../src/RemoteOutcome.js"
import * as ScriptedLanguageModel from "../src/ScriptedLanguageModel.js"
import { captureLogs, makeClient, send } from "./fixtures/serverAgents.js"

class PaymentDeclined extends Data.TaggedError("PaymentDeclined")<{ readonly message: string }> {}

/** The cause of the failure: it must reach this side's log and nothing else. */
const secret = "acquirer said: card 4111-1111 declined, limit 300 EUR"

const textOf = (request: AgentExecutor.AgentRequest): string => Part.textOf(request.message.parts)

/**
 * The first word decides: `fail` fails inside the agent's own span
 * `payment.charge`; `interrupt` interrupts itself (FAILED, settled after
 * the run's fiber ended); `reject` rejects; `cancel` is refused by the
 * admission hook; anything else completes. Every run logs a line first.
 */
const paymentAgent: AgentExecutor.Agent<PaymentDeclined> = (request) =>
  Effect.gen(function*() {
    const text = textOf(request)
    yield* Effect.logInfo("booking request received")
    if (text.startsWith("fail")) {
      return yield* Effect.logInfo("charging the card").pipe(
        Effect.zipRight(Effect.fail(new PaymentDeclined({ message: secret }))),
        Effect.withSpan("payment.charge")
      )
    }
    if (text.startsWith("reject")) return AgentExecutor.Rejected({ reason: "no flights to the moon" })
    if (text.startsWith("interrupt")) return yield* Effect.interrupt
    return AgentExecutor.completedText("booked")
  })

let servers = 0
// Metrics are process-wide: every server gets its own agent name.
const freshName = (prefix: string) => `${prefix}-${process.pid}-${++servers}`

const serve = (name: string, options: Partial<A2AServer.Options<PaymentDeclined, never>> = {}) =>
  A2AServer.make({
    agent: paymentAgent,
    card: { name, description: "Books flights and charges the card" },
    beforeExecute: (request) => Effect.succeed(textOf(request).startsWith("cancel")),
    shutdownTimeout: "1 second",
    ...options
  })

const failedErrorId = (outcome: RemoteOutcome.RemoteOutcome): string => {
  expect(outcome._tag).toBe("Failed")
  return outcome._tag === "Failed" ? Option.getOrThrow(outcome.errorId) : ""
}

const traceIdOf = (span: ReadableSpan) => span.spanContext().traceId
const spanIdOf = (span: ReadableSpan) => span.spanContext().spanId

describe("Observability", () => {
  it.scopedLive("one trace from the orchestrator's call through RemoteAgent to the server run and the agent's failure", () => {
    const exporter = new InMemorySpanExporter()
    const logs = captureLogs()
    const Otel = NodeSdk.layer(() => ({
      spanProcessor: new SimpleSpanProcessor(exporter),
      resource: { serviceName: "effect-a2a-observability-test" }
    }))
    return Effect.gen(function*() {
      // Client and server share this process and this tracer: the server is started under it.
      const agentName = freshName("payments")
      const server = yield* serve(agentName)
      const remote = yield* RemoteAgent.make({ name: "booking", url: server.url, timeout: "5 seconds" })
      const orchestrator = yield* Orchestrator.make({
        agents: [GuardedRemoteAgent.make(remote)],
        instructions: "You book travel."
      })
      const model = ScriptedLanguageModel.make(ScriptedLanguageModel.followsInstruction("booking", "fail flight 4821"))
      const reply = yield* orchestrator.respond("Please book flight 4821 for Ana").pipe(
        Effect.provide(model.layer),
        Effect.withSpan("travel.respond"),
        // The client logs an outcome, a FAILED one too, at Debug.
        Logger.withMinimumLogLevel(LogLevel.Debug)
      )
      const outcome = Option.getOrThrow(reply.calls[0]!.result.outcome)
      const errorId = failedErrorId(outcome)

      const spans = exporter.getFinishedSpans()
      const named = (name: string) => spans.filter((span) => span.name === name)
      const [root] = named("travel.respond")
      expect(root).toBeDefined()
      const traceId = traceIdOf(root!)
      const ancestry = (span: ReadableSpan): Array<ReadableSpan> => {
        const chain = [span]
        for (let parent = span.parentSpanContext; parent !== undefined && chain.length < 50;) {
          const next = spans.find((candidate) => spanIdOf(candidate) === parent!.spanId)
          if (next === undefined) break
          chain.push(next)
          parent = next.parentSpanContext
        }
        return chain
      }

      // The client's span, in the orchestrator's trace.
      // The server's run: same trace, child of the client's span, joined through `traceparent`.
      const executes = named(Observability.executeSpanName)
      expect(executes).toHaveLength(1)
      const execute = executes[0]!
      expect(traceIdOf(execute)).toBe(traceId)
      expect(execute.kind).toBe(SpanKind.SERVER)
      // Its parent is the client's span of the call, itself under the orchestrator's.
      const client = spans.find((span) => spanIdOf(span) === execute.parentSpanContext?.spanId)
      expect(client?.name).toMatch(/^RemoteAgent\./)
      expect(client?.kind).toBe(SpanKind.CLIENT)
      expect(ancestry(execute).at(-1)).toBe(root)
      expect(execute.attributes).toMatchObject({
        "a2a.task_id": outcome.taskId,
        "a2a.context_id": outcome.contextId,
        "a2a.agent": agentName,
        "a2a.task_state": "TASK_STATE_FAILED",
        "a2a.error_id": errorId
      })
      expect(execute.events.find((event) => event.name === "a2a.failure")?.attributes).toEqual({
        "a2a.error_id": errorId
      })
      expect(execute.status).toEqual({
        code: SpanStatusCode.ERROR,
        message: `Agent execution failed. (error_id: ${errorId})`
      })
      // The run's span carries the error id, never the cause (nor the log line that holds it).
      const exported = JSON.stringify({
        attributes: execute.attributes,
        events: execute.events,
        status: execute.status
      })
      expect(exported).toContain(errorId)
      expect(exported).not.toContain("4111")
      expect(exported).not.toContain("PaymentDeclined")

      // The agent's own span: a child of the run, where the failure happened.
      const [charge] = named("payment.charge")
      expect(charge).toBeDefined()
      expect(traceIdOf(charge!)).toBe(traceId)
      expect(ancestry(charge!).slice(0, 2)).toEqual([charge, execute])
      expect(ancestry(charge!).at(-1)).toBe(root)
      expect(charge!.status.code).toBe(SpanStatusCode.ERROR)

      // Every log line of the run, the agent's included, names the task, the context and the trace.
      const runLines = logs.lines.filter((line) => line.annotations.taskId === outcome.taskId)
      const serverLines = runLines.filter((line) => line.annotations.agent === agentName)
      expect(serverLines.map((line) => line.message)).toEqual(
        expect.arrayContaining([
          "booking request received",
          "charging the card",
          `Runner failed to execute [error_id=${errorId}]`
        ])
      )
      for (const line of serverLines) {
        expect(line.annotations).toMatchObject({ contextId: outcome.contextId, traceId })
      }
      // The client's line of the same task names the error id too.
      const clientLines = runLines.filter((line) => line.annotations.agent === "booking")
      expect(clientLines.some((line) => line.annotations.errorId === errorId)).toBe(true)
      const failure = serverLines.find((line) => line.message === `Runner failed to execute [error_id=${errorId}]`)
      expect(failure?.annotations.errorId).toBe(errorId)
      expect(String(failure?.annotations.cause)).toContain(secret)
    }).pipe(Effect.provide(Layer.merge(Otel, logs.layer)))
  })

  it.scopedLive("without a traceparent the run is a trace of its own; the agent's spans are still its children", () => {
    const exporter = new InMemorySpanExporter()
    const Otel = NodeSdk.layer(() => ({ spanProcessor: new SimpleSpanProcessor(exporter) }))
    return Effect.gen(function*() {
      const server = yield* serve(freshName("untraced"))
      // The SDK's own client sends no traceparent.
      const client = yield* makeClient(server.url)
      const task = yield* send(client, "fail now")
      const taskId = task.id
      const execute = exporter.getFinishedSpans().find((span) =>
        span.name === Observability.executeSpanName && span.attributes["a2a.task_id"] === taskId
      )
      expect(execute).toBeDefined()
      expect(execute!.parentSpanContext).toBeUndefined()
      const charge = exporter.getFinishedSpans().find((span) =>
        span.name === "payment.charge" && traceIdOf(span) === traceIdOf(execute!)
      )
      expect(charge?.parentSpanContext?.spanId).toBe(spanIdOf(execute!))

      // A run settled after its fiber was interrupted ends its span the same way.
      const interrupted = yield* send(client, "interrupt now")
      const errorId = /error_id: ([0-9a-f]{12})/.exec(JSON.stringify(interrupted.status))?.[1]
      expect(errorId).toBeDefined()
      const settled = exporter.getFinishedSpans().find((span) =>
        span.name === Observability.executeSpanName && span.attributes["a2a.task_id"] === interrupted.id
      )
      expect(settled?.attributes["a2a.error_id"]).toBe(errorId)
      expect(settled?.status.code).toBe(SpanStatusCode.ERROR)
    }).pipe(Effect.provide(Otel))
  })

  it.scopedLive("server counters count each ending per agent; the latency histogram counts every run", () =>
    Effect.gen(function*() {
      const agentName = freshName("counted")
      const server = yield* serve(agentName)
      const remote = yield* RemoteAgent.make({
        name: freshName("counted-client"),
        url: server.url,
        timeout: "5 seconds"
      })
      const count = (metric: Metric.Metric.Counter<number>, agent = agentName) =>
        Effect.map(Metric.value(Metric.tagged(metric, "agent", agent)), (state) => state.count)
      const counts = Effect.all({
        completed: count(Observability.serverCompleted),
        failed: count(Observability.serverFailed),
        canceledByAdmission: count(Observability.serverCanceledByAdmission),
        latency: Effect.map(
          Metric.value(Metric.tagged(Observability.serverLatency, "agent", agentName)),
          (state) => state.count
        )
      })
      expect(yield* counts).toEqual({ completed: 0, failed: 0, canceledByAdmission: 0, latency: 0 })

      expect((yield* remote.send("book flight 1"))._tag).toBe("Completed")
      expect(yield* counts).toEqual({ completed: 1, failed: 0, canceledByAdmission: 0, latency: 1 })
      failedErrorId(yield* remote.send("fail flight 2"))
      expect(yield* counts).toEqual({ completed: 1, failed: 1, canceledByAdmission: 0, latency: 2 })
      expect((yield* remote.send("cancel flight 3"))._tag).toBe("Canceled")
      expect(yield* counts).toEqual({ completed: 1, failed: 1, canceledByAdmission: 1, latency: 3 })
      // Endings without a counter of their own still count in the latency.
      expect((yield* remote.send("reject flight 4"))._tag).toBe("Rejected")
      expect((yield* remote.send("book flight 5"))._tag).toBe("Completed")
      expect(yield* counts).toEqual({ completed: 2, failed: 1, canceledByAdmission: 1, latency: 5 })
      failedErrorId(yield* remote.send("interrupt flight 6"))
      expect(yield* counts).toEqual({ completed: 2, failed: 2, canceledByAdmission: 1, latency: 6 })

      // The `name` option tags the metrics instead of the card name.
      const alias = freshName("alias")
      const named = yield* serve(freshName("card-name"), { name: alias })
      const aliased = yield* RemoteAgent.make({ name: freshName("alias-client"), url: named.url, timeout: "5 seconds" })
      failedErrorId(yield* aliased.send("fail flight 7"))
      expect(yield* count(Observability.serverFailed, alias)).toBe(1)
      expect(yield* counts).toEqual({ completed: 2, failed: 2, canceledByAdmission: 1, latency: 6 })
    }))

  it.scopedLive("the JSON log file: one object per line; a failure's entry has taskId, contextId, errorId, traceId and the cause", () => {
    const file = path.join(os.tmpdir(), `effect-a2a-observability-${process.pid}-${Date.now()}.log`)
    return Effect.gen(function*() {
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(file, { force: true })))
      const server = yield* serve(freshName("logged"))
      const remote = yield* RemoteAgent.make({
        name: freshName("logged-client"),
        url: server.url,
        timeout: "5 seconds"
      })
      // Effect's own tracer: the caller's trace id reaches the server's log through `traceparent`.
      const [caller, outcome] = yield* Effect.zip(Effect.currentSpan, remote.send("fail flight 4821")).pipe(
        Effect.withSpan("caller")
      )
      const errorId = failedErrorId(outcome)

      const lines = fs.readFileSync(file, "utf8").split("\n")
      expect(lines.at(-1)).toBe("")
      const entries = lines.slice(0, -1).map((line) =>
        JSON.parse(line) as { message: unknown; logLevel: string; annotations: Record<string, unknown> }
      )
      expect(entries.length).toBeGreaterThan(0)
      for (const entry of entries) {
        expect(Object.keys(entry)).toEqual(expect.arrayContaining(["message", "logLevel", "timestamp", "annotations"]))
      }
      // Both sides of the call log in this process: the server's entry holds the cause.
      const failures = entries.filter((entry) =>
        entry.annotations.errorId === errorId && entry.message === `Runner failed to execute [error_id=${errorId}]`
      )
      expect(failures).toHaveLength(1)
      const failure = failures[0]!
      expect(failure.logLevel).toBe("ERROR")
      expect(failure.annotations).toMatchObject({
        taskId: outcome.taskId,
        contextId: outcome.contextId,
        traceId: caller.traceId
      })
      expect(String(failure.annotations.cause)).toContain(secret)
      // The agent's own line of that run carries the same ids.
      const agentLine = entries.find((entry) =>
        entry.message === "booking request received" && entry.annotations.taskId === outcome.taskId
      )
      expect(agentLine?.annotations).toMatchObject({ contextId: outcome.contextId, traceId: caller.traceId })
    }).pipe(Effect.provide(Observability.layerJsonLogs({ file })))
  })

  it.effect("layerJsonLogs() writes JSON lines to stdout in place of the default logger", () =>
    Effect.gen(function*() {
      const console = yield* Effect.console
      const written: Array<unknown> = []
      const capture = {
        ...console,
        unsafe: {
          ...console.unsafe,
          log: (...args: ReadonlyArray<unknown>) => {
            for (const arg of args) written.push(arg)
          }
        }
      }
      yield* Effect.logWarning("seat held").pipe(
        Effect.annotateLogs({ taskId: "t-1", contextId: "c-1" }),
        Observability.annotateLogsWithTraceId,
        Effect.withSpan("hold"),
        Effect.provide(Observability.layerJsonLogs()),
        Effect.withConsole(capture)
      )
      expect(written).toHaveLength(1)
      const entry = JSON.parse(String(written[0])) as {
        message: unknown
        logLevel: string
        annotations: Record<string, unknown>
      }
      expect(entry.message).toBe("seat held")
      expect(entry.logLevel).toBe("WARN")
      expect(entry.annotations.taskId).toBe("t-1")
      expect(entry.annotations.contextId).toBe("c-1")
      expect(entry.annotations.traceId).toMatch(/^[0-9a-f]{32}$/)
    }))

  it.effect("a log file that cannot be opened is a LogFileError", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.provide(
          Effect.void,
          Observability.layerJsonLogs({ file: path.join(os.tmpdir(), "no-such-dir-a2a", "x.log") })
        )
      )
      expect(error).toBeInstanceOf(Observability.LogFileError)
      expect(error.reason).toBe("Open")
    }))
})
