/**
 * Traces, metrics and JSON logs of a call across the A2A boundary, exported
 * through `@effect/opentelemetry`: a booking agent served by our A2A server
 * and called through `RemoteAgent`, in one process, both under one
 * OpenTelemetry SDK that prints to the console.
 *
 *   npx tsx examples/opentelemetry.ts
 *
 * What to look for:
 * - one trace: `checkout` → `RemoteAgent.SendMessage` → `A2AServer.execute`
 *   → `booking.charge` (the agent's own span), joined through `traceparent`;
 *   the failed run's span has `a2a.error_id`, never the cause;
 * - the JSON log lines of the run carry `taskId`, `contextId`, `traceId`,
 *   and `errorId` with the real cause on the failure;
 * - the metrics `a2a.server.completed`, `a2a.server.failed`,
 *   `a2a.server.latency` and the client's `a2a.remote_*`, tagged `agent`.
 *
 * For a collector instead of the console, swap the exporters for
 * `@opentelemetry/exporter-trace-otlp-http` and
 * `@opentelemetry/exporter-metrics-otlp-http` (or use `@effect/opentelemetry/Otlp`).
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { NodeRuntime } from "@effect/platform-node"
import { ConsoleMetricExporter, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor, ConsoleSpanExporter } from "@opentelemetry/sdk-trace-base"
import { Data, Effect, Option } from "effect"
import { A2AServer, AgentExecutor, Observability, Part, RemoteAgent } from "effect-a2a"

class PoolExhausted extends Data.TaggedError("PoolExhausted")<{ readonly message: string }> {}

const booking: AgentExecutor.Agent<PoolExhausted> = (request) =>
  Effect.gen(function*() {
    const text = Part.textOf(request.message.parts)
    yield* Effect.logInfo(`booking: ${text}`)
    if (text.includes("pay")) {
      // The agent's own span: a child of the run's `A2AServer.execute`.
      return yield* Effect.withSpan(
        Effect.fail(new PoolExhausted({ message: "connection pool exhausted (db-primary:5432, 20/20 in use)" })),
        "booking.charge"
      )
    }
    return AgentExecutor.completedText(`booked: ${text}`)
  })

const ServerLive = A2AServer.layer({ agent: booking, card: { name: "booking", description: "books flights" } })

// Spans in batches, metrics every 5 seconds; both are flushed when the program ends.
const OtelLive = NodeSdk.layer(() => ({
  resource: { serviceName: "effect-a2a-example" },
  spanProcessor: new BatchSpanProcessor(new ConsoleSpanExporter()),
  metricReader: new PeriodicExportingMetricReader({
    exporter: new ConsoleMetricExporter(),
    exportIntervalMillis: 5_000
  })
}))

const program = Effect.gen(function*() {
  const server = yield* A2AServer.A2AServer
  const agent = yield* RemoteAgent.make({ name: "booking", url: server.url, timeout: "10 seconds" })
  for (const text of ["flight 4821 for Ana", "flight 4821 for Ana, pay now"]) {
    const [span, outcome] = yield* Effect.zip(Effect.currentSpan, agent.send(text)).pipe(Effect.withSpan("checkout"))
    const errorId = outcome._tag === "Failed" ? Option.getOrElse(outcome.errorId, () => "none") : "-"
    yield* Effect.logInfo(`${text} -> ${outcome._tag}`).pipe(
      Effect.annotateLogs({ traceId: span.traceId, taskId: outcome.taskId, errorId })
    )
  }
})

program.pipe(
  Effect.provide(ServerLive),
  // Outside the server: its runs are traced and logged with these.
  Effect.provide(OtelLive),
  Effect.provide(Observability.layerJsonLogs()),
  NodeRuntime.runMain
)
