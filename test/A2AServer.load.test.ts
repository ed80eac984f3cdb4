import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Either, Metric, Stream } from "effect"
import * as Http from "node:http"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Observability from "../src/Observability.js"
import * as Part from "../src/Part.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import * as RetryPolicy from "../src/RetryPolicy.js"
import { eventually, makeClient, sendMessage, userMessage } from "./fixtures/serverAgents.js"

/** An agent whose runs wait for `gate`, counting those in progress. */
const gated = (gate: Deferred.Deferred<void>) => {
  const running = { now: 0, most: 0 }
  const agent: AgentExecutor.Agent = (request) =>
    Effect.gen(function*() {
      running.now++
      running.most = Math.max(running.most, running.now)
      yield* Deferred.await(gate)
      return AgentExecutor.completedText(`done ${Part.textOf(request.message.parts)}`)
    }).pipe(Effect.ensuring(Effect.sync(() => running.now--)))
  return { agent, running }
}

const shedCount = (agent: string, bound: "server" | "caller") =>
  Effect.map(
    Metric.value(Observability.serverShed.pipe(Metric.tagged("agent", agent), Metric.tagged("bound", bound))),
    (state) => state.count
  )

/** A raw JSON-RPC SendMessage from a chosen local address: another caller, as the server tells them apart. */
const sendFrom = (url: string, localAddress: string, text: string) =>
  Effect.promise(() =>
    new Promise<number>((resolve, reject) => {
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "SendMessage",
        params: { message: { ...userMessage(text), parts: [{ text }] } }
      })
      const request = Http.request(url, {
        method: "POST",
        localAddress,
        headers: { "content-type": "application/json", "a2a-version": "1.0", "content-length": Buffer.byteLength(body) }
      }, (response) => {
        response.resume()
        resolve(response.statusCode ?? 0)
      })
      request.on("error", reject)
      request.end(body)
    })
  )

describe("A2AServer maxInFlight", () => {
  it.scopedLive("past the bound, every caller ends typed: admitted ones complete, the rest are Refused 429 with Retry-After, before anything ran", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { agent, running } = gated(gate)
      const name = `shed-${crypto.randomUUID()}`
      const server = yield* A2AServer.make({ agent, card: { name, description: "bounded" }, maxInFlight: 2 })
      const client = yield* RemoteAgent.make({ name: "caller", url: server.url })
      const calls = yield* Effect.forkAll(
        Array.from({ length: 6 }, (_, i) => Effect.either(client.send(`call ${i}`))),
        { discard: false }
      )
      yield* eventually(Effect.sync(() => running.now), (n) => n === 2)
      yield* eventually(shedCount(name, "server"), (n) => n === 4)
      // Reading a task is never shed, even at the bound.
      const sdk = yield* makeClient(server.url)
      const read = yield* Effect.either(
        Effect.tryPromise({
          try: () => sdk.getTask({ tenant: "", id: "no-such-task", historyLength: undefined }),
          catch: (e) => e
        })
      )
      expect(Either.isLeft(read) && String(read.left)).toMatch(/not found/i)

      yield* Deferred.succeed(gate, undefined)
      const results = yield* calls.await.pipe(Effect.flatten)
      const completed = results.filter(Either.isRight)
      const refused = results.filter(Either.isLeft).map((r) => r.left)
      expect(completed.map((r) => r.right._tag)).toEqual(["Completed", "Completed"])
      expect(refused).toHaveLength(4)
      for (const error of refused) {
        expect(error).toMatchObject({ reason: "HttpStatus", status: 429, delivery: "Refused" })
        expect(error.retryAfter && Duration.toMillis(error.retryAfter)).toBe(1000)
      }
      expect(running.most).toBe(2)
      // No task left WORKING: the admitted ones are COMPLETED in the store, and the refused made none.
      for (const result of completed) {
        const task = yield* Effect.promise(() =>
          sdk.getTask({ tenant: "", id: result.right.taskId, historyLength: undefined })
        )
        expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      }
    }))

  it.scopedLive("RetryPolicy gets the refused calls through once load drops", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { agent, running } = gated(gate)
      const server = yield* A2AServer.make({ agent, card: { name: "retried", description: "bounded" }, maxInFlight: 1 })
      const client = yield* RemoteAgent.make({ name: "caller", url: server.url })
      const first = yield* Effect.fork(client.send("first"))
      yield* eventually(Effect.sync(() => running.now), (n) => n === 1)
      // No idempotency key: a 429 is a refusal, nothing ran, so it is safe to send again.
      const others = yield* Effect.fork(Effect.all(
        ["second", "third"].map((text) =>
          client.send(text).pipe(RetryPolicy.retry({ maxAttempts: 10 }, { idempotent: false }))
        ),
        { concurrency: "unbounded" }
      ))
      yield* Effect.sleep("200 millis")
      yield* Deferred.succeed(gate, undefined)
      const outcomes = [yield* first.await.pipe(Effect.flatten), ...(yield* others.await.pipe(Effect.flatten))]
      expect(outcomes.map((o) => o._tag)).toEqual(["Completed", "Completed", "Completed"])
      expect(running.most).toBe(1)
    }))

  it.scopedLive("a non-blocking send holds its place until its run ends, a stream while it is open", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { agent, running } = gated(gate)
      const name = `held-${crypto.randomUUID()}`
      const server = yield* A2AServer.make({ agent, card: { name, description: "bounded" }, maxInFlight: 1 })
      const sdk = yield* makeClient(server.url)
      // Answered at once, its run goes on: the next send is shed until it ends.
      const task = yield* sendMessage(sdk, userMessage("in the background"), {}, true)
      expect(task.status?.state).not.toBe(TaskState.TASK_STATE_COMPLETED)
      const client = yield* RemoteAgent.make({ name: "caller", url: server.url })
      const shed = yield* Effect.flip(client.send("meanwhile"))
      expect(shed).toMatchObject({ status: 429, delivery: "Refused" })
      yield* Deferred.succeed(gate, undefined)
      yield* eventually(Effect.sync(() => running.now), (n) => n === 0)
      // The run ended: there is room again, taken now by a stream for as long as it is open.
      yield* eventually(Effect.either(client.send("after")), Either.isRight)
      const events = yield* Stream.runCollect(client.stream("streamed"))
      expect(Array.from(events).at(-1)?._tag).toBe("Finished")
      expect(yield* shedCount(name, "server")).toBeGreaterThanOrEqual(1)
    }))

  it.scopedLive("maxInFlightPerCaller tells callers apart by their address", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { agent, running } = gated(gate)
      const name = `per-caller-${crypto.randomUUID()}`
      const server = yield* A2AServer.make({ agent, card: { name, description: "bounded" }, maxInFlightPerCaller: 1 })
      const first = yield* Effect.fork(sendFrom(server.rpcUrl, "127.0.0.1", "first"))
      yield* eventually(Effect.sync(() => running.now), (n) => n === 1)
      expect(yield* sendFrom(server.rpcUrl, "127.0.0.1", "same caller")).toBe(429)
      expect(yield* shedCount(name, "caller")).toBe(1)
      const other = yield* Effect.fork(sendFrom(server.rpcUrl, "127.0.0.2", "another caller"))
      yield* eventually(Effect.sync(() => running.now), (n) => n === 2)
      yield* Deferred.succeed(gate, undefined)
      expect(yield* first.await.pipe(Effect.flatten)).toBe(200)
      expect(yield* other.await.pipe(Effect.flatten)).toBe(200)
    }))

  it.effect("a bound that is not a positive integer fails start-up with ConfigurationError InvalidOption", () =>
    Effect.gen(function*() {
      for (const maxInFlight of [0, -1, 1.5, Number.NaN]) {
        const error = yield* Effect.flip(Effect.scoped(A2AServer.make({
          agent: () => Effect.succeed(AgentExecutor.completedText("x")),
          card: { name: "invalid", description: "bounded" },
          maxInFlight
        })))
        expect(error).toMatchObject({ _tag: "ConfigurationError", reason: "InvalidOption" })
      }
    }))
})
