import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Logger, LogLevel, Metric, MetricState, Option, Queue, Schema, Stream } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import * as Cli from "../src/Cli.js"
import * as PushReceiver from "../src/PushReceiver.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { closedPort, peerErrorId, sdkPeer } from "./fixtures/peers.js"
import { captureLogs, eventually } from "./fixtures/serverAgents.js"

const root = path.resolve(import.meta.dirname, "..")

/** `effect-a2a …` as a process, killed after 30 seconds. */
const cli = (args: ReadonlyArray<string>) =>
  Effect.async<{ readonly code: number | null; readonly stdout: string }>((resume) => {
    const env = { ...process.env }
    delete env["NODE_OPTIONS"]
    const child = spawn(process.execPath, ["--import", "tsx", "src/bin.ts", ...args], {
      cwd: root,
      env,
      stdio: ["ignore", "pipe", "ignore"]
    })
    let stdout = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.on("close", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, stdout }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

let agents = 0
/** A fresh agent name per test keeps the global metric counters apart. */
const agentFor = (url: string) => RemoteAgent.make({ name: `pushed-${++agents}`, url, timeout: "5 seconds" })

const count = (name: string, agent: string) =>
  Effect.map(Metric.snapshot, (snapshot) =>
    snapshot
      .filter((pair) =>
        pair.metricKey.name === name && pair.metricKey.tags.some((t) => t.key === "agent" && t.value === agent)
      )
      .reduce(
        (sum, pair) => sum + (MetricState.isCounterState(pair.metricState) ? Number(pair.metricState.count) : 0),
        0
      ))

describe("RemoteAgent with a push receiver, against the SDK's server with push on", () => {
  it.scopedLive("send with push: a FAILED task's outcome comes by push, counted and logged as a call's, without polling", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer({ push: true })
      const receiver = yield* PushReceiver.serve()
      const agent = yield* agentFor(peer.url)
      const { layer, lines } = captureLogs()
      const outcome = yield* agent.send("fail", { push: receiver }).pipe(
        Effect.provide(layer),
        Logger.withMinimumLogLevel(LogLevel.Debug)
      )
      expect(outcome._tag).toBe("Failed")
      expect(outcome.text).toBe(`Agent execution failed. (error_id: ${peerErrorId})`)
      expect(outcome._tag === "Failed" && Option.getOrNull(outcome.errorId)).toBe(peerErrorId)
      expect(outcome.agent).toBe(agent.name)
      // It came by push: the receiver has it, and the client never asked for the task.
      expect(Option.isSome(yield* receiver.delivered(outcome.taskId))).toBe(true)
      expect(peer.methods()).toEqual(["SendMessage"])
      expect(yield* count("a2a.remote_failed", agent.name)).toBe(1)
      const line = lines.find((l) => l.annotations["channel"] === "push")
      expect(line?.annotations).toMatchObject({
        agent: agent.name,
        outcome: "Failed",
        taskId: outcome.taskId,
        errorId: peerErrorId
      })
    }))

  it.scopedLive("stream with push: the stream ends as usual, and the receiver gets the same outcome", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer({ push: true })
      const receiver = yield* PushReceiver.serve()
      const agent = yield* agentFor(peer.url)
      const events = Chunk.toReadonlyArray(
        yield* Stream.runCollect(agent.stream("complete seat 12A", { push: receiver }))
      )
      const last = events[events.length - 1]
      expect(last?._tag === "Finished" && last.outcome._tag).toBe("Completed")
      const taskId = last?._tag === "Finished" ? last.outcome.taskId : ""
      const pushed = yield* receiver.outcome(taskId).pipe(Effect.timeout("5 seconds"))
      expect([pushed._tag, pushed.text, pushed.agent]).toEqual(["Completed", "completed: seat 12A", agent.name])
    }))

  it.scopedLive("a card without push: a typed InvalidRequest, NotSent, and nothing is sent", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const receiver = yield* PushReceiver.serve()
      const agent = yield* agentFor(peer.url)
      const error = yield* Effect.flip(agent.send("complete", { push: receiver }))
      expect([error._tag, error.reason, error.delivery, error.operation]).toEqual([
        "A2AClientError",
        "InvalidRequest",
        "NotSent",
        "SendMessage"
      ])
      expect(error.detail).toContain("pushNotifications")
      const streamed = yield* Effect.flip(Stream.runDrain(agent.stream("complete", { push: receiver })))
      expect([streamed.reason, streamed.delivery, streamed.operation]).toEqual([
        "InvalidRequest",
        "NotSent",
        "SendStreamingMessage"
      ])
      expect(peer.methods()).toEqual([])
      expect(yield* count("a2a.client_error", agent.name)).toBe(2)
    }))

  it.scopedLive("a lost webhook (the receiver's URL is a closed port) loses nothing: the outcome is polled", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer({ push: true })
      const lost = yield* PushReceiver.make({ url: `${yield* closedPort}/a2a/push` })
      const agent = yield* agentFor(peer.url)
      const outcome = yield* agent.send("sleep 100", { push: lost, timeout: "500 millis" })
      expect([outcome._tag, outcome.text]).toEqual(["Completed", "slept"])
      expect(yield* lost.delivered(outcome.taskId)).toEqual(Option.none())
      expect(peer.methods()).toContain("GetTask")
      // awaitOutcome on its own: the same fallback, at its own pace.
      const again = yield* agent.awaitOutcome(outcome.taskId, {
        receiver: lost,
        timeout: "200 millis",
        pollEvery: "50 millis"
      })
      expect(again._tag).toBe("Completed")
    }))

  it.scopedLive("awaitOutcome: a push that comes while polling wins; no outcome in either window is a Timeout", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer({ push: true })
      const receiver = yield* PushReceiver.serve()
      const agent = yield* agentFor(peer.url)
      const events = yield* receiver.subscribe
      const done = yield* agent.send("complete now", { push: receiver })
      expect(Option.isSome(yield* receiver.delivered(done.taskId))).toBe(true)
      expect(Chunk.size(yield* Queue.takeAll(events))).toBeGreaterThan(0)
      const polls = peer.methods().filter((m) => m === "GetTask").length
      const awaited = yield* agent.awaitOutcome(done.taskId, { receiver, timeout: "1 second" })
      expect(awaited._tag).toBe("Completed")
      expect(peer.methods().filter((m) => m === "GetTask").length).toBe(polls)
      // A task that does not end in time: polled in vain for the second window, then cancelled as asked.
      const sleeping = yield* agent.send("sleep 3000", {
        push: receiver,
        timeout: "100 millis",
        cancelOnInterrupt: true
      }).pipe(Effect.flip)
      expect([sleeping.reason, sleeping.delivery, sleeping.operation]).toEqual(["Timeout", "Unknown", "SendMessage"])
      yield* eventually(Effect.sync(() => peer.methods()), (methods) => methods.includes("CancelTask"))
    }))

  it.scopedLive("probe --push reports the pushed outcome, and push: false when the card declares none", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer({ push: true })
      const report = yield* Cli.probe({ url: peer.url, text: "fail", timeout: Duration.seconds(5), push: true })
      expect([report.channel, report.outcome, report.errorId, report.push]).toEqual([
        "Outcome",
        "Failed",
        peerErrorId,
        true
      ])
      const none = yield* Cli.probe({
        url: (yield* sdkPeer()).url,
        text: "complete",
        timeout: Duration.seconds(5),
        push: true
      })
      expect([none.channel, none.reason, none.delivery, none.push]).toEqual([
        "ClientError",
        "InvalidRequest",
        "NotSent",
        false
      ])
    }))

  it.scopedLive(
    "effect-a2a probe URL --push, as a process: the FAILED outcome pushed by the SDK's sender to its receiver",
    () =>
      Effect.gen(function*() {
        const peer = yield* sdkPeer({ push: true })
        const { code, stdout } = yield* cli([
          "probe",
          peer.url,
          "--push",
          "--json",
          "--text",
          "fail",
          "--timeout",
          "10s"
        ])
        const report = Schema.decodeUnknownSync(Cli.ProbeReport, { onExcessProperty: "error" })(
          JSON.parse(stdout.trim())
        )
        expect([code, report.channel, report.outcome, report.errorId, report.push]).toEqual([
          5,
          "Outcome",
          "Failed",
          peerErrorId,
          true
        ])
        expect(peer.methods()).toEqual(["SendMessage"])
      }),
    60_000
  )
})
