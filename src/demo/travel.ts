/**
 * The worked example: a travel orchestrator and a remote booking service on
 * 127.0.0.1, with the embedded defaults (SQLite ledger, scripted model, no
 * key), through every way a delegation can end. `npm start` and
 * `effect-a2a demo` run it.
 *
 * With a model provider's key and its `@effect/ai` provider installed,
 * pass that provider's `LanguageModel` layer to {@link runWith} (public as
 * `Cli.runDemoWith`) instead of the scripted one.
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as A2AServer from "../A2AServer.js"
import type * as Agent from "../Agent.js"
import * as AgentExecutor from "../AgentExecutor.js"
import * as CircuitBreaker from "../CircuitBreaker.js"
import type * as Cli from "../Cli.js"
import * as findError from "../cli/findError.js"
import * as GuardedRemoteAgent from "../GuardedRemoteAgent.js"
import * as Idempotency from "../Idempotency.js"
import * as IdempotencyLedger from "../IdempotencyLedger.js"
import * as Observability from "../Observability.js"
import * as Orchestrator from "../Orchestrator.js"
import * as Part from "../Part.js"
import * as RemoteAgent from "../RemoteAgent.js"
import * as RemoteOutcome from "../RemoteOutcome.js"
import * as ScriptedLanguageModel from "../ScriptedLanguageModel.js"
import * as TcpProxy from "./tcpProxy.js"

/** What the payment step throws when the database pool is exhausted: detail that must never cross the wire. */
class PaymentError extends Data.TaggedError("PaymentError")<{ readonly detail: string }> {
  override get message() {
    return this.detail
  }
}

/** Side effects of the booking service, counted so the example can show what ran. */
interface Ledgerbook {
  reservations: number
  paymentAttempts: number
  readonly failPaymentsFor: Set<string>
}

const requestText = (request: AgentExecutor.AgentRequest) => Part.textOf(request.message.parts)

const parse = (text: string) => {
  const match = /flight (\S+) for (\S+)/.exec(text)
  return { flight: match?.[1] ?? "?", passenger: match?.[2] ?? "?" }
}

/** The remote booking agent: reserves a seat (at most once per trip), then takes payment. */
const bookingAgent = (
  book: Ledgerbook
): AgentExecutor.Agent<PaymentError | IdempotencyLedger.IdempotencyError, IdempotencyLedger.IdempotencyLedger> =>
(request) =>
  Effect.gen(function*() {
    const text = requestText(request)
    const { flight, passenger } = parse(text)
    if (text.includes("slowly")) yield* Effect.sleep("2 seconds")
    // The key names the trip, not the task: a retry is a new task, yet finds the reservation.
    const key = Idempotency.deriveKey({
      contextId: `trip-${passenger}`,
      operation: "reserve-seat",
      params: { flight, passenger }
    })
    const seat = yield* Idempotency.once(
      key,
      Effect.sync(() => {
        book.reservations++
        return `12A on ${flight}`
      }),
      { success: Schema.String }
    )
    yield* AgentExecutor.status(`seat ${seat} reserved for ${passenger}`)
    book.paymentAttempts++
    if (book.failPaymentsFor.delete(passenger)) {
      return yield* new PaymentError({
        detail:
          "SQLTransientConnectionException: connection pool exhausted (payments-db:5432, 20/20 in use, wait 30000ms)"
      })
    }
    return AgentExecutor.completedText(`booked seat ${seat} for ${passenger}`)
  })

const noFlyList = new Set(["Mallory"])

const bookingService = (book: Ledgerbook, dir: string, publicUrl: string) =>
  A2AServer.layer({
    publicUrl,
    agent: bookingAgent(book),
    card: { name: "booking", description: "Books flights. Say: book flight <number> for <passenger>." },
    // Admission: refused requests end CANCELED before the agent runs.
    beforeExecute: (request) => Effect.succeed(noFlyList.has(parse(requestText(request)).passenger)),
    afterExecute: AgentExecutor.failureHints((cause) => ({
      retryable: Cause.failureOption(cause).pipe(Option.exists((e) => e instanceof PaymentError)),
      contact: "payments-oncall"
    }))
  }).pipe(
    Layer.provide(IdempotencyLedger.layerSqlite({ filename: path.join(dir, "ledger.sqlite") })),
    // The service logs JSON lines to its own file, not to the demo's console.
    Layer.provide(Layer.mergeAll(
      Observability.layerJsonLogs({ file: path.join(dir, "booking-service.log") }),
      Logger.remove(Logger.defaultLogger),
      Logger.minimumLogLevel(LogLevel.Info)
    ))
  )

/** The channel a delegation ended in, from the guard's result. */
const channelOf = (result: Agent.Result): string =>
  Option.match(result.outcome, {
    onSome: (outcome) => `Outcome (${outcome._tag})`,
    onNone: () =>
      Option.match(result.error, {
        onNone: () => "none",
        onSome: (error) =>
          error._tag === "CircuitOpen" ? "CircuitOpen (not sent)" : `ClientError (${error.reason}, ${error.delivery})`
      })
  })

const show = (n: number, title: string, reply: Orchestrator.Reply, seen: Array<Orchestrator.Reply>) =>
  Effect.gen(function*() {
    seen.push(reply)
    const call = reply.calls.at(-1)
    const outcome = Option.flatMap(Option.fromNullable(call), (c) => c.result.outcome)
    yield* Console.log(`\n[${n}] ${title}`)
    if (call !== undefined) {
      yield* Console.log(`    channel:        ${channelOf(call.result)}`)
      const taskId = Option.match(outcome, {
        onSome: (o) => o.taskId,
        onNone: () =>
          Option.match(call.result.error, {
            onNone: () => "",
            onSome: (e) => ("taskId" in e ? e.taskId : undefined) ?? ""
          })
      })
      yield* Console.log(`    task id:        ${taskId || "-"}`)
      yield* Console.log(
        `    error id:       ${Option.getOrElse(Option.flatMap(outcome, RemoteOutcome.errorIdOf), () => "-")}`
      )
      yield* Console.log(`    model was told: ${call.result.text}`)
    }
    yield* Console.log(`    model said:     ${reply.text}`)
    return Option.flatMap(outcome, RemoteOutcome.errorIdOf)
  })

/**
 * Runs the scenarios with `model` as the orchestrator's parent model and
 * prints what happened in each. Any `@effect/ai` provider's `LanguageModel`
 * layer works; `run` uses the scripted one.
 */
export const runWith = <E>(model: Layer.Layer<LanguageModel.LanguageModel, E>) =>
  Effect.scoped(Effect.provide(program, model))

/**
 * The scenarios with the scripted model: no network, no key.
 */
export const run = Effect.suspend(() =>
  runWith(ScriptedLanguageModel.make(ScriptedLanguageModel.delegates("booking")).layer)
)

const program = Effect.gen(function*() {
  const seen: Array<Orchestrator.Reply> = []
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-demo-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
  const book: Ledgerbook = { reservations: 0, paymentAttempts: 0, failPaymentsFor: new Set(["Ana"]) }
  // Callers reach the service through a proxy, so scenarios 4 and 5 can take it down.
  const target = { host: "127.0.0.1", port: 0 }
  const proxy = yield* TcpProxy.make(() => target)
  // Built in its own fiber: the service's log settings stay with the service.
  const built = yield* Effect.fork(Layer.build(bookingService(book, dir, proxy.url))).pipe(
    Effect.flatMap((f) => f.await)
  )
  const server = Context.get(yield* built, A2AServer.A2AServer)
  target.port = server.address.port

  const orchestratorFor = (remote: RemoteAgent.RemoteAgent, breaker?: CircuitBreaker.CircuitBreaker) =>
    Orchestrator.make({
      name: "travel",
      instructions: "You are a travel assistant. Use the booking agent to book flights.",
      agents: [GuardedRemoteAgent.make(remote, breaker === undefined ? {} : { breaker })]
    })

  yield* Console.log(`booking service on ${server.url} (log: JSON lines, ledger: SQLite, model: scripted)`)
  const booking = yield* RemoteAgent.make({ name: "booking", url: proxy.url, timeout: "10 seconds" })
  const breaker = yield* CircuitBreaker.make("booking", {
    trip: CircuitBreaker.consecutiveFailures(3),
    openDuration: "30 seconds"
  })
  const travel = yield* orchestratorFor(booking, breaker)
  const ask = (text: string) => travel.respond(text)

  yield* show(1, "A booking that succeeds", yield* ask("book flight 4821 for Kim"), seen)

  const failedId = yield* show(
    2,
    "The payment step fails (connection pool exhausted)",
    yield* ask("book flight 4821 for Ana"),
    seen
  )
  yield* show(
    2,
    "... the user asks again: a new task; the reservation is found, only payment runs",
    yield* ask("book flight 4821 for Ana"),
    seen
  )
  yield* Console.log(
    `    side effects:   seat reservations made ${book.reservations} (Kim, Ana once), payments tried ${book.paymentAttempts}`
  )

  const down = yield* RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:9", onCardFailure: "degrade" })
  yield* show(
    3,
    "The booking service is down at start-up: started degraded",
    yield* (yield* orchestratorFor(down)).respond("book flight 4821 for Kim"),
    seen
  )

  const cut = yield* Effect.fork(ask("book flight 77 for Zoe slowly"))
  yield* Effect.sleep("300 millis")
  yield* proxy.stop
  yield* show(4, "The service dies during a call", yield* cut.await.pipe(Effect.flatten), seen)

  for (const attempt of [1, 2]) {
    yield* show(5, `The service stays down (attempt ${attempt})`, yield* ask("book flight 4821 for Kim"), seen)
  }
  yield* show(
    5,
    "... repeated failures opened the circuit: the next call fails fast",
    yield* ask("book flight 4821 for Kim"),
    seen
  )

  // The proxy is down now; this caller reaches the service directly.
  const directCard = {
    ...server.card,
    supportedInterfaces: server.card.supportedInterfaces.map((i) => ({
      ...i,
      url: i.url.replace(server.url, `http://127.0.0.1:${server.address.port}`)
    }))
  }
  const direct = yield* RemoteAgent.make({ name: "booking", url: server.url, card: directCard })
  yield* show(
    6,
    "The admission hook refuses a request",
    yield* (yield* orchestratorFor(direct)).respond("book flight 4821 for Mallory"),
    seen
  )

  yield* Console.log(
    `\n[7] Runbook: find-error ${Option.getOrElse(failedId, () => "?")} over the booking service's log`
  )
  const matches = yield* Option.match(failedId, {
    onNone: () => Effect.succeed([] as ReadonlyArray<Cli.LogMatch>),
    onSome: (id) =>
      findError.search(id, findError.fileSource(path.join(dir, "booking-service.log"))).pipe(Stream.runCollect)
  })
  for (const match of matches) yield* Console.log(findError.formatMatch(match).replace(/^/gm, "    "))
  // Everything the model was given, in every scenario.
  const told = seen.map((reply) => ScriptedLanguageModel.promptText(reply.prompt)).join("\n")
  yield* Console.log(
    `    the cause crossed the network: ${told.includes("connection pool exhausted") ? "YES (bug)" : "no"}`
  )
  return { matches: matches.length, reservations: book.reservations, paymentAttempts: book.paymentAttempts }
})
