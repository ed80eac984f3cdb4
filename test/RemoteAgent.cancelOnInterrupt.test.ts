/**
 * `cancelOnInterrupt`: a call given up on (interrupted, or out of time) after
 * it learnt its task's id cancels the task on the server; without the option,
 * before any task id, or after the task ended, no CancelTask goes out.
 */
import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Logger, LogLevel, Stream } from "effect"
import * as RemoteAgent from "../src/RemoteAgent.js"
import type * as RemoteEvent from "../src/RemoteEvent.js"
import { json, type Peer, rawPeer, rpcId, sdkPeer } from "./fixtures/peers.js"
import { captureLogs, eventually } from "./fixtures/serverAgents.js"

const cancels = (peer: Peer) => peer.methods().filter((method) => method === "CancelTask").length

/** Long enough for a CancelTask to have arrived, had one been sent. */
const settle = Effect.sleep("300 millis")

/** Streams `text`, interrupting the stream once its first event came; returns that event's task id. */
const interruptedAfterFirstEvent = (stream: Stream.Stream<RemoteEvent.RemoteEvent, unknown>) =>
  Effect.gen(function*() {
    const first = yield* Deferred.make<RemoteEvent.RemoteEvent>()
    const fiber = yield* stream.pipe(
      Stream.runForEach((event) => Deferred.succeed(first, event)),
      Effect.fork
    )
    const event = yield* Deferred.await(first).pipe(Effect.timeout("5 seconds"))
    yield* Fiber.interrupt(fiber)
    return event._tag === "Finished" ? event.outcome.taskId : event.taskId
  })

/** The task's state on the server as the client reads it, until `check` holds (bounded). */
const stateOf = (agent: RemoteAgent.RemoteAgent, taskId: string, check: (tag: string) => boolean) =>
  eventually(Effect.map(Effect.orDie(agent.getTask(taskId)), (task) => task._tag), check, 500)

describe("RemoteAgent cancelOnInterrupt", () => {
  it.scopedLive("a stream interrupted after its first event cancels its task, with the option on the agent or on the call", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const onAgent = yield* RemoteAgent.make({ name: "scripted", url: peer.url, cancelOnInterrupt: true })
      const byAgent = yield* interruptedAfterFirstEvent(onAgent.stream("sleep 20000"))
      expect(yield* stateOf(onAgent, byAgent, (tag) => tag === "Canceled")).toBe("Canceled")

      const plain = yield* RemoteAgent.make({ name: "scripted", url: peer.url })
      const byCall = yield* interruptedAfterFirstEvent(plain.stream("sleep 20000", { cancelOnInterrupt: true }))
      expect(yield* stateOf(plain, byCall, (tag) => tag === "Canceled")).toBe("Canceled")
      expect(cancels(peer)).toBe(2)
    }))

  it.scopedLive("without the option, or with the call's false over the agent's true, the task keeps running", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const plain = yield* RemoteAgent.make({ name: "scripted", url: peer.url })
      const onAgent = yield* RemoteAgent.make({ name: "scripted", url: peer.url, cancelOnInterrupt: true })
      const byDefault = yield* interruptedAfterFirstEvent(plain.stream("sleep 20000"))
      const overridden = yield* interruptedAfterFirstEvent(onAgent.stream("sleep 20000", { cancelOnInterrupt: false }))
      yield* settle
      expect(cancels(peer)).toBe(0)
      expect(yield* stateOf(plain, byDefault, () => true)).toBe("Running")
      expect(yield* stateOf(plain, overridden, () => true)).toBe("Running")
    }))

  it.scopedLive("a stream that times out after an event, its task still running, cancels it", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const agent = yield* RemoteAgent.make({ name: "scripted", url: peer.url, cancelOnInterrupt: true })
      const seen: Array<RemoteEvent.RemoteEvent> = []
      const failure = yield* agent.stream("sleep 20000", { timeout: "300 millis" }).pipe(
        Stream.runForEach((event) => Effect.sync(() => seen.push(event))),
        Effect.flip
      )
      expect(failure).toMatchObject({ reason: "Timeout", delivery: "Unknown" })
      const taskId = failure.taskId!
      expect(seen.length).toBeGreaterThan(0)
      expect(yield* stateOf(agent, taskId, (tag) => tag === "Canceled")).toBe("Canceled")
    }))

  it.scopedLive("a blocking send that times out once an answer gave its task id cancels the task", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const agent = yield* RemoteAgent.make({ name: "scripted", url: peer.url })
      // The agent's turn ends with the task WORKING: the answer names the task, which the send then polls.
      const failure = yield* Effect.flip(
        agent.send("working 20000", { timeout: "500 millis", cancelOnInterrupt: true })
      )
      expect(failure).toMatchObject({ reason: "Timeout", delivery: "Unknown" })
      expect(peer.methods()).toContain("GetTask")
      expect(yield* stateOf(agent, failure.taskId!, (tag) => tag === "Canceled")).toBe("Canceled")
      expect(cancels(peer)).toBe(1)

      // Interrupted while it polls the task: the same.
      const polling = yield* Effect.fork(
        agent.send("working 20000", { timeout: "20 seconds", cancelOnInterrupt: true })
      )
      const polls = () => peer.methods().filter((method) => method === "GetTask").length
      const before = polls()
      yield* eventually(Effect.sync(polls), (n) => n > before, 500)
      yield* Fiber.interrupt(polling)
      yield* eventually(Effect.sync(() => cancels(peer)), (n) => n === 2, 500)
    }))

  it.scopedLive("the cancel is best effort: refused, it is logged at Debug and the caller sees only its interruption", () =>
    Effect.gen(function*() {
      const task = { id: "t-1", contextId: "c-1", status: { state: TaskState[TaskState.TASK_STATE_WORKING] } }
      const peer = yield* rawPeer((_req, res, body) => {
        if (body.includes("CancelTask")) {
          return json(res, 200, {
            jsonrpc: "2.0",
            id: rpcId(body),
            error: { code: -32002, message: "Task not cancelable" }
          })
        }
        // One event, then the stream stays open.
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: rpcId(body), result: { task } })}\n\n`)
      })
      const agent = yield* RemoteAgent.make({ name: "stubborn", url: peer.url, cancelOnInterrupt: true })
      const { layer: capture, lines } = captureLogs()
      const first = yield* Deferred.make<void>()
      const fiber = yield* agent.stream("book").pipe(
        Stream.runForEach(() => Deferred.succeed(first, undefined)),
        Logger.withMinimumLogLevel(LogLevel.Debug),
        Effect.provide(capture),
        Effect.fork
      )
      yield* Deferred.await(first).pipe(Effect.timeout("5 seconds"))
      const exit = yield* Fiber.interrupt(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      const logged = yield* eventually(
        Effect.sync(() => lines.filter((line) => line.message.includes("could not cancel task t-1"))),
        (found) => found.length > 0,
        500
      )
      expect(logged).toMatchObject([{
        level: "DEBUG",
        annotations: { agent: "stubborn", taskId: "t-1", reason: "ProtocolError" }
      }])
      expect(peer.methods()).toEqual(["SendStreamingMessage", "CancelTask"])
    }))

  it.scopedLive("no CancelTask when the call is given up on before any task id, or after its task ended", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const agent = yield* RemoteAgent.make({ name: "scripted", url: peer.url, cancelOnInterrupt: true })
      // A blocking send whose answer never came: the server has a task, the client never learnt its id.
      const blocked = yield* Effect.flip(agent.send("sleep 20000", { timeout: "300 millis" }))
      expect(blocked).toMatchObject({ reason: "Timeout" })
      expect(blocked.taskId).toBeUndefined()
      // Interrupted while the last event, the task's end, is being handled.
      const finished = yield* Deferred.make<void>()
      const fiber = yield* agent.stream("complete").pipe(
        Stream.runForEach((event) =>
          event._tag === "Finished" ? Effect.zipRight(Deferred.succeed(finished, undefined), Effect.never) : Effect.void
        ),
        Effect.fork
      )
      yield* Deferred.await(finished).pipe(Effect.timeout("5 seconds"))
      yield* Fiber.interrupt(fiber)
      yield* settle
      expect(cancels(peer)).toBe(0)

      // A stream interrupted before its first event.
      const silent = yield* rawPeer(() => undefined)
      const quiet = yield* RemoteAgent.make({ name: "silent", url: silent.url, cancelOnInterrupt: true })
      const waiting = yield* Effect.fork(Stream.runDrain(quiet.stream("book")))
      yield* eventually(Effect.sync(() => silent.methods().length), (n) => n > 0, 500)
      yield* Fiber.interrupt(waiting)
      yield* settle
      expect(silent.methods()).toEqual(["SendStreamingMessage"])
    }))
})
