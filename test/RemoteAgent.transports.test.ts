import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, type Either, FastCheck, Fiber, Runtime, Schedule, Stream } from "effect"
import type * as A2AClientError from "../src/A2AClientError.js"
import * as A2AServer from "../src/A2AServer.js"
import * as playground from "../src/cli/playground.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import type * as RemoteEvent from "../src/RemoteEvent.js"
import type * as RemoteOutcome from "../src/RemoteOutcome.js"
import { closedPort } from "./fixtures/peers.js"
import { cardWith, legacyPeers, sdkPeers } from "./fixtures/transportPeers.js"

const transports = ["JSONRPC", "HTTP+JSON", "GRPC"] as const

const endings = ["complete x", "fail", "fail-hint", "cancel", "reject no", "input when?", "auth"]

/** One behaviour of the agent, as a call on `agent`: every ending, by send and by stream, and each A2A error it can give. */
const behaviours: ReadonlyArray<
  readonly [
    string,
    (agent: RemoteAgent.RemoteAgent) => Effect.Effect<RemoteOutcome.TaskView, A2AClientError.A2AClientError>
  ]
> = [
  ...endings.map((text) => [`send ${text}`, (agent: RemoteAgent.RemoteAgent) => agent.send(text)] as const),
  ...endings.map((text) =>
    [
      `stream ${text}`,
      (agent: RemoteAgent.RemoteAgent) =>
        Effect.map(Stream.runCollect(agent.stream(text)), (events) =>
          (Chunk.unsafeLast(events) as RemoteEvent.Finished).outcome)
    ] as const
  ),
  ["getTask of an unknown task", (agent) => agent.getTask(crypto.randomUUID())],
  [
    "cancel of a completed task",
    (agent) => Effect.flatMap(agent.send("complete"), (done) => agent.cancel(done.taskId))
  ],
  [
    "a message to a completed task",
    (agent) =>
      Effect.flatMap(
        agent.send("complete"),
        (done) => agent.send({ parts: [], taskId: done.taskId, contextId: done.contextId })
      )
  ],
  [
    "resubscribe to a completed task",
    (agent) =>
      Effect.flatMap(
        agent.send("complete"),
        (done) =>
          Effect.map(Stream.runCollect(agent.resubscribe(done.taskId)), (events) =>
            (Chunk.unsafeLast(events) as RemoteEvent.Finished).outcome)
      )
  ],
  ["a message to an unknown task", (agent) => agent.send({ parts: [], taskId: crypto.randomUUID(), contextId: "" })]
]

/** What must be equal across transports: the outcome without its ids, or the error's reason, delivery and A2A name. */
const comparable = (result: Either.Either<RemoteOutcome.TaskView, A2AClientError.A2AClientError>) =>
  result._tag === "Right"
    ? { ...result.right, agent: "", taskId: "", contextId: "" }
    : { reason: result.left.reason, delivery: result.left.delivery, protocolError: result.left.protocolError }

describe("one agent behaviour reads the same on every transport", () => {
  it.scopedLive("every ending and every A2A error the SDK's servers give: equal outcomes, or the same reason and delivery", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(transports)
      const agents = yield* Effect.forEach(
        transports,
        (transport) =>
          RemoteAgent.make({ name: `same-${transport}`, url: peers.url, timeout: "5 seconds", transports: [transport] })
      )
      const runtime = yield* Effect.runtime<never>()
      const seen = new Set<string>()
      yield* Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(FastCheck.constantFrom(...behaviours), async ([name, call]) => {
            const results = await Runtime.runPromise(runtime)(
              Effect.forEach(agents, (agent) => Effect.either(call(agent)))
            )
            const [jsonRpc, ...others] = results.map(comparable)
            for (const [i, other] of others.entries()) {
              expect(other, `${name} over ${transports[i + 1]}`).toEqual(jsonRpc)
            }
            // Each error came over the transport asked for.
            results.forEach((r, i) => r._tag === "Left" && expect(r.left.transport).toBe(transports[i]))
            seen.add(name)
          }),
          { numRuns: 60 }
        )
      )
      // The property ran over most behaviours, not a lucky few.
      expect(seen.size).toBeGreaterThan(behaviours.length / 2)
    }))
})

describe("one behaviour of our server reads the same on every transport", () => {
  /** Our server's own refusals beside the SDK's: a request over the body bound, one nested too deep, one over the load bound. */
  const nested = (depth: number) => {
    let value: unknown = "leaf"
    for (let i = 0; i < depth; i++) value = { inner: value }
    return value as never
  }
  const refusals: ReadonlyArray<
    readonly [
      string,
      (agent: RemoteAgent.RemoteAgent) => Effect.Effect<RemoteOutcome.TaskView, A2AClientError.A2AClientError>
    ]
  > = [
    ["a request over maxBodyBytes", (agent) => agent.send("y".repeat(40_000))],
    ["a request nested too deep", (agent) => agent.send({ parts: [], metadata: { deep: nested(300) } })]
  ]

  it.scopedLive("every ending, every A2A error and each of our refusals, served by A2AServer: equal outcomes, or the same reason and delivery", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({
        agent: playground.agent,
        beforeExecute: playground.admission,
        card: { name: "same", description: "ends as the message asks" },
        maxBodyBytes: 30_000
      })
      const agents = yield* Effect.forEach(
        transports,
        (transport) =>
          RemoteAgent.make({
            name: `ours-${transport}`,
            url: server.url,
            timeout: "5 seconds",
            transports: [transport]
          })
      )
      const runtime = yield* Effect.runtime<never>()
      const all = [...behaviours, ...refusals]
      const seen = new Set<string>()
      yield* Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(FastCheck.constantFrom(...all), async ([name, call]) => {
            const results = await Runtime.runPromise(runtime)(
              Effect.forEach(agents, (agent) => Effect.either(call(agent)))
            )
            // Each run has its own error id, and the playground names each artifact afresh.
            const [jsonRpc, ...others] = results.map((result) =>
              JSON.parse(
                JSON.stringify(comparable(result))
                  .replace(/\b[0-9a-f]{12}\b/g, "<error id>")
                  .replace(/"artifactId":"[^"]*"/g, `"artifactId":""`)
              )
            )
            for (const [i, other] of others.entries()) {
              expect(other, `${name} over ${transports[i + 1]}`).toEqual(jsonRpc)
            }
            seen.add(name)
          }),
          { numRuns: 60 }
        )
      )
      expect(seen.size).toBeGreaterThan(all.length / 2)
    }))

  it.scopedLive("over maxInFlight, a send is refused the same way on every transport, with its Retry-After", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({
        agent: playground.agent,
        card: { name: "bounded", description: "one at a time" },
        maxInFlight: 1
      })
      const agents = yield* Effect.forEach(
        transports,
        (transport) =>
          RemoteAgent.make({
            name: `bounded-${transport}`,
            url: server.url,
            timeout: "10 seconds",
            transports: [transport]
          })
      )
      const holding = yield* Effect.fork(agents[0]!.send("sleep 1500"))
      // Until the slow one holds the only place, a quick one may still get through: bounded tries.
      const shedOn = (agent: RemoteAgent.RemoteAgent) =>
        Effect.flip(agent.send("complete quick")).pipe(
          Effect.retry({ times: 50, schedule: Schedule.spaced("20 millis") }),
          Effect.map((error) => ({
            reason: error.reason,
            delivery: error.delivery,
            retryAfter: error.retryAfter && Duration.toMillis(error.retryAfter)
          }))
        )
      const shed = yield* Effect.forEach(agents, shedOn)
      expect(shed).toEqual(transports.map(() => ({ reason: "HttpStatus", delivery: "Refused", retryAfter: 1000 })))
      expect(yield* Fiber.join(holding)).toMatchObject({ _tag: "Completed" })
    }))
})

describe("what the wire does reads the same on every transport", () => {
  it.scopedLive("a connection refused is ConnectionRefused, NotSent; a call past its time is Timeout, Unknown", () =>
    Effect.gen(function*() {
      const closed = yield* closedPort
      const urls = { JSONRPC: `${closed}/rpc`, "HTTP+JSON": `${closed}/rest`, GRPC: new URL(closed).host }
      const peers = yield* sdkPeers(transports)
      for (const transport of transports) {
        const refused = yield* RemoteAgent.make({
          name: `refused-${transport}`,
          url: closed,
          card: cardWith([{ protocolBinding: transport, url: urls[transport] }])
        })
        expect(yield* Effect.flip(refused.send("hello"))).toMatchObject({
          reason: "ConnectionRefused",
          delivery: "NotSent",
          transport
        })
        const slow = yield* RemoteAgent.make({
          name: `slow-${transport}`,
          url: peers.url,
          timeout: "300 millis",
          transports: [transport]
        })
        expect(yield* Effect.flip(slow.send("sleep 2000"))).toMatchObject({
          reason: "Timeout",
          delivery: "Unknown",
          transport
        })
        const silent = yield* Effect.flip(Stream.runDrain(slow.stream("sleep 2000")))
        expect(silent, transport).toMatchObject({ reason: "Timeout", delivery: "Unknown", transport })
      }
    }))
})

describe("v0.3 peers on HTTP+JSON and gRPC", () => {
  it.scopedLive("the SDK's v0.3 servers: endings and A2A errors read as from a v1.0 peer", () =>
    Effect.gen(function*() {
      const peers = yield* legacyPeers
      for (const transport of ["HTTP+JSON", "GRPC"] as const) {
        const agent = yield* RemoteAgent.make({
          name: `v03-${transport}`,
          url: peers.url,
          card: peers.card,
          transports: [transport]
        })
        expect(yield* agent.send("complete x")).toMatchObject({ _tag: "Completed", text: "completed: x" })
        const events = Chunk.toArray(yield* Stream.runCollect(agent.stream("reject no")))
        expect(events.at(-1), transport).toMatchObject({ _tag: "Finished", outcome: { _tag: "Rejected", text: "no" } })
        expect(yield* Effect.flip(agent.getTask("no-such-task"))).toMatchObject({
          reason: "ProtocolError",
          protocolError: "TaskNotFound",
          delivery: "Refused",
          transport
        })
        const done = yield* agent.send("complete")
        expect(yield* Effect.flip(agent.cancel(done.taskId))).toMatchObject({
          protocolError: "TaskNotCancelable",
          delivery: "Refused"
        })
      }
    }))
})
