import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Duration, Effect, Exit, Option, Schema, Stream } from "effect"
import * as A2AClientError from "../../../src/A2AClientError.js"
import * as Agent from "../../../src/Agent.js"
import * as CircuitBreaker from "../../../src/CircuitBreaker.js"
import * as GuardedRemoteAgent from "../../../src/GuardedRemoteAgent.js"
import * as internalAgent from "../../../src/internal/agent/agent.js"
import { CircuitOpen } from "../../../src/internal/client/resilience/circuitOpen.js"
import * as Part from "../../../src/Part.js"
import type * as RemoteAgent from "../../../src/RemoteAgent.js"
import * as RemoteEvent from "../../../src/RemoteEvent.js"
import * as RemoteOutcome from "../../../src/RemoteOutcome.js"

const ids = { agent: "booking", taskId: "task-1", contextId: "context-1" }
const status = (text: string) => RemoteEvent.Status.make({ ...ids, state: "Working", text, parts: [] })
const completed = RemoteOutcome.Completed.make({ ...ids, text: "booked", parts: [], artifacts: [] })
const events: ReadonlyArray<RemoteEvent.RemoteEvent> = [
  status(""),
  status("checking seats"),
  RemoteEvent.ArtifactChunk.make({
    ...ids,
    artifact: Part.Artifact.make({ artifactId: "ticket", name: "ticket", description: "", parts: [] }),
    append: false,
    lastChunk: true
  }),
  status("  "),
  status("paying"),
  RemoteEvent.Finished.make({ outcome: completed })
]

/** A remote agent whose every stream is `stream`; only what the agents read of it is there. */
const remoteOf = (stream: Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError>) =>
  ({ name: "booking", card: Option.none(), stream: () => stream }) as unknown as RemoteAgent.RemoteAgent

describe("foldRemote: the one reading of a remote event stream", () => {
  it.effect("hands on each non-empty status text and returns the outcome", () =>
    Effect.gen(function*() {
      const texts: Array<string> = []
      const outcome = yield* internalAgent.foldRemote(
        "booking",
        Stream.fromIterable(events),
        (text) => Effect.sync(() => void texts.push(text))
      )
      expect(outcome).toBe(completed)
      expect(texts).toEqual(["checking seats", "paying"])
    }))

  it.effect("a stream without an outcome is a defect; a typed failure stays typed", () =>
    Effect.gen(function*() {
      const ended = yield* Effect.exit(
        internalAgent.foldRemote("booking", Stream.make(status("x")), () => Effect.void)
      )
      expect(Exit.isFailure(ended) && Cause.isDie(ended.cause)).toBe(true)
      const error = new A2AClientError.A2AClientError({
        agent: "booking",
        operation: "SendStreamingMessage",
        reason: "StreamInterrupted",
        delivery: "Unknown",
        detail: "cut"
      })
      const cut = Stream.concat(Stream.make(status("x")), Stream.fail(error))
      const failed = yield* Effect.flip(internalAgent.foldRemote("booking", cut, () => Effect.void))
      expect(failed).toBe(error)
    }))

  it.effect("fromRemote and the guard report the same progress, then their own result", () =>
    Effect.gen(function*() {
      const remote = remoteOf(Stream.fromIterable(events))
      const unguarded = Chunk.toArray(yield* Stream.runCollect(Agent.fromRemote(remote).run("book")))
      const guarded = Chunk.toArray(yield* Stream.runCollect(GuardedRemoteAgent.make(remote).run("book")))
      for (const run of [unguarded, guarded]) {
        expect(run.map((event) => event._tag)).toEqual(["Progress", "Progress", "Result"])
        expect(run.slice(0, 2)).toEqual([
          Agent.Progress.make({ agent: "booking", text: "checking seats" }),
          Agent.Progress.make({ agent: "booking", text: "paying" })
        ])
        expect(run.at(-1)?.text).toBe("booked")
        expect(Option.getOrUndefined((run.at(-1) as Agent.Result).outcome)).toBe(completed)
      }
    }))
})

describe("CircuitOpen lives below the breaker", () => {
  it("the public class is the internal one, so a result's schema takes it", () => {
    expect(CircuitBreaker.CircuitOpen).toBe(CircuitOpen)
    const error = new CircuitBreaker.CircuitOpen({ agent: "booking", retryAfter: Duration.seconds(20), state: "Open" })
    expect(error).toBeInstanceOf(CircuitOpen)
    const result = Agent.Result.make({ agent: "booking", text: "", outcome: Option.none(), error: Option.some(error) })
    expect(Schema.is(Agent.Result)(result)).toBe(true)
    expect(error.message).toBe("booking: circuit open, retry after 20s")
  })
})
