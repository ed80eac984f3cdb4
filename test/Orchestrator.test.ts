import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Effect, Exit, Option, Scope, Stream } from "effect"
import type * as A2AClientError from "../src/A2AClientError.js"
import * as Agent from "../src/Agent.js"
import * as CircuitBreaker from "../src/CircuitBreaker.js"
import * as GuardedRemoteAgent from "../src/GuardedRemoteAgent.js"
import * as Orchestrator from "../src/Orchestrator.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import {
  claimsSuccess,
  followsInstruction,
  make as scriptedModel,
  promptText,
  type Script,
  systemText,
  text,
  toolCall,
  toolResults
} from "../src/ScriptedLanguageModel.js"
import { authText, confirmation, question, rejectReason, serveBooking } from "./fixtures/bookingAgent.js"
import { closedPort, rawPeer } from "./fixtures/peers.js"

let agents = 0
// Metrics are process-wide, so every remote agent gets its own name; the tool keeps the name "booking".
const freshName = () => `booking-${++agents}`

const guardedBooking = (url: string, options: GuardedRemoteAgent.Options = {}) =>
  Effect.map(
    RemoteAgent.make({ name: freshName(), url, timeout: "5 seconds" }),
    (remote) => GuardedRemoteAgent.make(remote, options)
  )

/** Offers the agent under the tool name "booking". */
const asBooking = (agent: Agent.Agent): Agent.Agent => ({ ...agent, name: "booking" })

const stoppedUrl = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const server = yield* Scope.extend(serveBooking(), scope)
  return { url: server.url, stop: Scope.close(scope, Exit.void) }
})

/**
 * Asks the orchestrator once, with a model that follows the instruction,
 * and returns what the model saw on its second turn.
 */
const askOnce = (agent: Agent.Agent, input: string) =>
  Effect.gen(function*() {
    const model = scriptedModel(followsInstruction("booking", input))
    const orchestrator = yield* Orchestrator.make({ agents: [asBooking(agent)], instructions: "You book travel." })
    const reply = yield* orchestrator.respond("Please book flight 4821 for Ana").pipe(Effect.provide(model.layer))
    const requests = yield* model.requests
    expect(requests).toHaveLength(2)
    expect(requests[0]!.tools).toEqual(["booking"])
    const first = requests[0]!.prompt
    expect(systemText(first)).toContain("You book travel.")
    expect(systemText(first)).toContain(Orchestrator.defaultInstruction)
    const seen = toolResults(requests[1]!.prompt)
    expect(seen).toHaveLength(1)
    return { reply, seen: seen[0]!, next: promptText(requests[1]!.prompt) }
  })

/** How the scripted models report success. */
const success = "your booking is confirmed"

const claimsNoSuccess = (replyText: string, toolResult: string) => {
  expect(replyText).not.toContain(success)
  expect(replyText).toContain("could not complete")
  expect(replyText).toContain("retry")
  // the model quotes what it read, error id included
  expect(replyText).toContain(toolResult)
}

describe("Orchestrator with a scripted LanguageModel and our booking server", () => {
  it.scopedLive("completed: the model reads the confirmation and reports success", () =>
    Effect.gen(function*() {
      const server = yield* serveBooking()
      const { reply, seen } = yield* askOnce(yield* guardedBooking(server.url), "book flight 4821 for Ana")
      expect(seen.startsWith(confirmation)).toBe(true)
      expect(reply.text).toContain(success)
      expect(reply.turns).toBe(2)
      expect(reply.calls.map((c) => [c.tool, c.input])).toEqual([["booking", "book flight 4821 for Ana"]])
    }))

  it.scopedLive("failed (typed error and defect on the remote): REMOTE_FAILED and the error id reach the next prompt", () =>
    Effect.gen(function*() {
      const server = yield* serveBooking()
      const booking = yield* guardedBooking(server.url)
      for (const input of ["fail flight 4821", "crash flight 4821"]) {
        const { next, reply, seen } = yield* askOnce(booking, input)
        const outcome = Option.getOrThrow(reply.calls[0]!.result.outcome)
        const errorId = outcome._tag === "Failed" ? Option.getOrThrow(outcome.errorId) : "none"
        expect(errorId).toMatch(/^[0-9a-f]{12}$/)
        expect(seen).toBe(`REMOTE_FAILED Agent execution failed. (error_id: ${errorId})`)
        expect(next).toContain(`tool-result booking: REMOTE_FAILED Agent execution failed. (error_id: ${errorId})`)
        claimsNoSuccess(reply.text, seen)
      }
    }))

  it.scopedLive("canceled by the admission hook, rejected, input required, auth required: each marker reaches the model", () =>
    Effect.gen(function*() {
      const server = yield* serveBooking()
      const booking = yield* guardedBooking(server.url)
      const cases = [
        ["cancel flight 4821", GuardedRemoteAgent.CANCELED],
        ["reject a flight to the moon", `${GuardedRemoteAgent.REJECTED} ${rejectReason}`],
        ["input flight 4821", `${GuardedRemoteAgent.INPUT_REQUIRED} ${question}`],
        ["auth flight 4821", `${GuardedRemoteAgent.AUTH_REQUIRED} ${authText}`]
      ] as const
      for (const [input, marker] of cases) {
        const { next, reply, seen } = yield* askOnce(booking, input)
        expect(seen.startsWith(marker)).toBe(true)
        expect(next).toContain(`tool-result booking: ${marker}`)
        claimsNoSuccess(reply.text, seen)
      }
    }))

  it.scopedLive("server stopped: REMOTE_UNAVAILABLE, not submitted, reaches the model", () =>
    Effect.gen(function*() {
      const { stop, url } = yield* stoppedUrl
      const booking = yield* guardedBooking(url)
      yield* stop
      const { reply, seen } = yield* askOnce(booking, "book flight 4821 for Ana")
      expect(seen).toBe(
        `REMOTE_UNAVAILABLE: the request was not submitted (${booking.name}: the connection was refused)`
      )
      claimsNoSuccess(reply.text, seen)
    }))

  it.scopedLive("connection lost after sending: REMOTE_UNAVAILABLE with an unknown outcome reaches the model", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((req) => req.socket.destroy())
      const booking = yield* guardedBooking(peer.url)
      const { reply, seen } = yield* askOnce(booking, "book flight 4821 for Ana")
      expect(seen).toMatch(/^REMOTE_UNAVAILABLE: the outcome is unknown: no task was confirmed/)
      claimsNoSuccess(reply.text, seen)
    }))

  it.scopedLive("degraded start-up: the unavailable remote and the stub both reach the model as REMOTE_UNAVAILABLE", () =>
    Effect.gen(function*() {
      const url = yield* closedPort
      const remote = yield* RemoteAgent.make({
        name: freshName(),
        url,
        onCardFailure: "degrade",
        cardTimeout: "2 seconds"
      })
      const cause = yield* Effect.flip(RemoteAgent.make({ name: freshName(), url, cardTimeout: "2 seconds" }))
      for (
        const agent of [
          GuardedRemoteAgent.make(remote, { description: "Books flights" }),
          Agent.unavailable(cause, "Books flights")
        ]
      ) {
        const { reply, seen } = yield* askOnce(agent, "book flight 4821 for Ana")
        expect(seen).toMatch(
          /^REMOTE_UNAVAILABLE: the request was not submitted \(.*the agent was not available at start-up\)$/
        )
        claimsNoSuccess(reply.text, seen)
      }
    }))

  it.scopedLive("circuit open after repeated failures: REMOTE_CIRCUIT_OPEN reaches the model, the remote is not called", () =>
    Effect.gen(function*() {
      const { stop, url } = yield* stoppedUrl
      const remote = yield* RemoteAgent.make({ name: freshName(), url, timeout: "5 seconds" })
      yield* stop
      const breaker = yield* CircuitBreaker.make(remote.name, { trip: CircuitBreaker.consecutiveFailures(2) })
      let attempts = 0
      const booking = GuardedRemoteAgent.make(remote, {
        breaker,
        retry: (call) => Effect.zipRight(Effect.sync(() => attempts++), call)
      })
      const seen: Array<string> = []
      for (let i = 0; i < 3; i++) {
        const { reply, seen: result } = yield* askOnce(booking, "book flight 4821 for Ana")
        claimsNoSuccess(reply.text, result)
        seen.push(result)
      }
      expect(seen[0]).toMatch(/^REMOTE_UNAVAILABLE: the request was not submitted/)
      expect(seen[1]).toMatch(/^REMOTE_UNAVAILABLE: the request was not submitted/)
      expect(seen[2]).toMatch(/^REMOTE_CIRCUIT_OPEN retry after 30s: the request was not submitted/)
      expect(attempts).toBe(2)
    }))

  it.scopedLive("without the instruction, the same scripted model has nothing to follow and claims success", () =>
    Effect.gen(function*() {
      const server = yield* serveBooking()
      const booking = asBooking(yield* guardedBooking(server.url))
      const model = scriptedModel(followsInstruction("booking", "fail flight 4821"))
      const orchestrator = yield* Orchestrator.make({ agents: [booking], remoteFailureInstruction: "" })
      const reply = yield* orchestrator.respond("Book flight 4821").pipe(Effect.provide(model.layer))
      const requests = yield* model.requests
      expect(systemText(requests[0]!.prompt)).not.toContain("REMOTE_FAILED")
      expect(reply.text).toContain(success)
    }))

  it.scopedLive("a model that ignores tool results is not corrected, but the marker is in its context", () =>
    Effect.gen(function*() {
      const server = yield* serveBooking()
      const booking = asBooking(yield* guardedBooking(server.url))
      const model = scriptedModel(claimsSuccess("booking", "fail flight 4821"))
      const orchestrator = yield* Orchestrator.make({ agents: [booking] })
      const reply = yield* orchestrator.respond("Book flight 4821").pipe(Effect.provide(model.layer))
      const requests = yield* model.requests
      expect(toolResults(requests[1]!.prompt)[0]).toMatch(/^REMOTE_FAILED .*error_id: [0-9a-f]{12}/)
      expect(Orchestrator.toolResults(reply.prompt)).toEqual(toolResults(requests[1]!.prompt))
    }))
})

describe("Orchestrator loop", () => {
  const local = Agent.make({
    name: "weather",
    description: "Tells the weather of a city",
    run: (city, progress) => Effect.as(progress(`looking up ${city}`), `sunny in ${city}`)
  })

  it.effect("loops model -> tools -> model until text, with several tool calls per turn; requests reads what was received by then", () =>
    Effect.gen(function*() {
      const model = scriptedModel((_request, turn) =>
        turn === 0
          ? [toolCall("weather", "Lisbon"), toolCall("weather", "Porto")]
          : turn === 1
          ? [toolCall("weather", "Faro")]
          : [text("All sunny.")]
      )
      const orchestrator = yield* Orchestrator.make({ agents: [local] })
      const before = yield* model.requests
      const reply = yield* orchestrator.respond("Weather?").pipe(Effect.provide(model.layer))
      expect(reply.text).toBe("All sunny.")
      expect(reply.turns).toBe(3)
      const requests = yield* model.requests
      // Each read is what had been received by then.
      expect(before).toEqual([])
      expect(requests).toHaveLength(3)
      expect(toolResults(requests[2]!.prompt)).toEqual(["sunny in Lisbon", "sunny in Porto", "sunny in Faro"])
      expect(reply.calls.map((c) => c.input)).toEqual(["Lisbon", "Porto", "Faro"])
    }))

  it.effect("the scripted models speak of the tool they call, whatever its name", () =>
    Effect.gen(function*() {
      const flights = (answer: string) =>
        Agent.make({ name: "flights", description: "Books flights", run: () => Effect.succeed(answer) })
      const replyOf = (agent: Agent.Agent, script: Script) =>
        Effect.flatMap(Orchestrator.make({ agents: [agent] }), (orchestrator) =>
          Effect.map(
            orchestrator.respond("Book flight 4821").pipe(Effect.provide(scriptedModel(script).layer)),
            (reply) => reply.text
          ))
      const failed = "REMOTE_FAILED Agent execution failed. (error_id: 0123456789ab)"
      expect(yield* replyOf(flights(failed), followsInstruction("flights", "book 4821")))
        .toBe(`I could not complete the flights (${failed}). Would you like me to retry?`)
      expect(yield* replyOf(flights("booked"), followsInstruction("flights", "book 4821"))).toBe(
        "Done: your flights is confirmed. booked"
      )
      expect(yield* replyOf(flights(failed), claimsSuccess("flights", "book 4821"))).toBe(
        "Done: your flights is confirmed."
      )
    }))

  it.effect("a model that never stops calling tools ends with a TurnLimit error after maxTurns calls; the last turn's are not run", () =>
    Effect.gen(function*() {
      let runs = 0
      const counted = Agent.make({
        name: "weather",
        description: "counts",
        run: (city) => Effect.sync(() => (runs++, `sunny in ${city}`))
      })
      const model = scriptedModel(() => [toolCall("weather", "Lisbon")])
      const orchestrator = yield* Orchestrator.make({ agents: [counted], maxTurns: 3 })
      const error = yield* Effect.flip(orchestrator.respond("Weather?").pipe(Effect.provide(model.layer)))
      expect(error._tag === "OrchestratorError" && [error.reason, error.turns]).toEqual(["TurnLimit", 3])
      const requests = yield* model.requests
      expect(requests).toHaveLength(3)
      // The last turn is asked to answer, and the call it made anyway had no effect (a booking would not be made).
      expect(requests.map((request) => request.toolChoice)).toEqual(["auto", "auto", "none"])
      expect(runs).toBe(2)
    }))

  it.effect("a defect in a local sub-agent is a defect of the orchestrator, never a tool result", () =>
    Effect.gen(function*() {
      const buggy = Agent.make({ name: "buggy", description: "has a bug", run: () => Effect.dieMessage("local bug") })
      const model = scriptedModel((_request, turn) => (turn === 0 ? [toolCall("buggy", "x")] : [text("fine")]))
      const orchestrator = yield* Orchestrator.make({ agents: [buggy] })
      const exit = yield* Effect.exit(orchestrator.respond("go").pipe(Effect.provide(model.layer)))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      expect(yield* model.requests).toHaveLength(1)
    }))

  it.effect("run: the orchestrator is an Agent too, forwarding sub-agent progress before its result", () =>
    Effect.gen(function*() {
      const model = scriptedModel((_request, turn) => (turn === 0 ? [toolCall("weather", "Lisbon")] : [text("Sunny.")]))
      const orchestrator = yield* Orchestrator.make({ name: "travel", agents: [local] })
      const events = Chunk.toArray(
        yield* Stream.runCollect(orchestrator.run("Weather?")).pipe(Effect.provide(model.layer))
      )
      expect(events.map((e) => [e._tag, e.agent, e.text])).toEqual([
        ["Progress", "weather", "looking up Lisbon"],
        ["Result", "travel", "Sunny."]
      ])
    }))

  it.effect("only agents whose failures are already explicit can be offered to the model", () =>
    Effect.gen(function*() {
      const unguarded: Agent.Agent<A2AClientError.A2AClientError> = {
        name: "raw",
        description: "an unguarded remote agent",
        run: () => Stream.empty
      }
      // @ts-expect-error an unguarded remote agent fails with errors the model would never see
      const exit = yield* Effect.exit(Orchestrator.make({ agents: [unguarded] }))
      expect(Exit.isSuccess(exit)).toBe(true)
    }))

  it.effect("tool names are sanitized and must be unique: two sub-agents under one name are an OrchestratorError", () =>
    Effect.gen(function*() {
      const a = Agent.make({ name: "flight booking", description: "a", run: () => Effect.succeed("a") })
      const b = Agent.make({ name: "flight.booking", description: "b", run: () => Effect.succeed("b") })
      const one = yield* Orchestrator.make({ agents: [a] })
      expect(Array.from(one.tools.keys())).toEqual(["flight_booking"])
      const error = yield* Effect.flip(Orchestrator.make({ agents: [a, b] }))
      expect(error).toMatchObject({
        reason: "DuplicateTool",
        turns: 0,
        tool: "flight_booking",
        agents: ["flight booking", "flight.booking"]
      })
      expect(error).toBeInstanceOf(Orchestrator.OrchestratorError)
      expect(error.message).toBe(
        "the sub-agents \"flight booking\" and \"flight.booking\" are both offered as the tool flight_booking: rename one"
      )
    }))
})
