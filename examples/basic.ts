/**
 * A runnable tour of the four ways a call to a remote agent can end: a local
 * booking agent served by our A2A server, called through `RemoteAgent`.
 *
 *   npm start
 */
import { NodeRuntime } from "@effect/platform-node"
import { Data, Effect, Option } from "effect"
import { A2AServer, AgentExecutor, Part, RemoteAgent, RemoteOutcome } from "effect-a2a"

class PoolExhausted extends Data.TaggedError("PoolExhausted")<{ readonly detail: string }> {}

/** Ends the way the request asks, so every channel can be shown. */
const booking: AgentExecutor.Agent<PoolExhausted> = (request) =>
  Effect.gen(function*() {
    const text = Part.textOf(request.message.parts)
    // A follow-up to a task this agent paused: the message answers its question.
    if (Option.exists(request.task, (task) => task.state === "InputRequired")) {
      return AgentExecutor.completedText(`booked for ${text}`)
    }
    yield* AgentExecutor.status(`booking: ${text}`)
    if (text.includes("pay")) {
      return yield* new PoolExhausted({ detail: "connection pool exhausted (db-primary:5432, 20/20 in use)" })
    }
    if (text.includes("date?")) return AgentExecutor.InputRequired({ question: "Which date should I book?" })
    if (text.includes("business")) return AgentExecutor.Rejected({ reason: "business class is not offered" })
    return AgentExecutor.completedText(`booked: ${text}`)
  })

const describe = RemoteOutcome.$match({
  Completed: (o) => `Completed: ${o.text}`,
  Failed: (o) => `Failed: ${o.text} (error id ${Option.getOrElse(o.errorId, () => "none")})`,
  Canceled: () => "Canceled",
  Rejected: (o) => `Rejected: ${o.text}`,
  InputRequired: (o) => `InputRequired: ${o.text}`,
  AuthRequired: () => "AuthRequired"
})

const program = Effect.gen(function*() {
  const server = yield* A2AServer.A2AServer
  yield* Effect.log(`booking agent listening on ${server.url}`)

  // Channel 1: card resolution happens here, once, at start-up.
  const agent = yield* RemoteAgent.make({ name: "booking", url: server.url, timeout: "10 seconds" })

  for (const text of ["flight 4821 for Ana", "flight 4821 for Ana, pay now", "flight 4821, date?", "business seat"]) {
    const outcome = yield* agent.send(text)
    console.log(`${text.padEnd(32)} -> ${describe(outcome)}`)
    if (outcome._tag === "InputRequired") {
      const answer = "May 3"
      const { contextId, taskId } = outcome
      const continued = yield* agent.send({ parts: [Part.TextPart.make({ text: answer })], taskId, contextId })
      console.log(`${`  answered "${answer}"`.padEnd(32)} -> ${describe(continued)}`)
    }
  }

  // Channel 2: a client error, typed, with an honest delivery.
  const down = yield* RemoteAgent.make({
    name: "nowhere",
    url: "http://127.0.0.1:9",
    onCardFailure: "degrade"
  })
  const error = yield* Effect.flip(down.send("anything"))
  console.log(`${"unreachable agent".padEnd(32)} -> ${error.reason} (${error.delivery})`)
})

program.pipe(
  Effect.provide(A2AServer.layer({ agent: booking, card: { name: "booking", description: "books flights" } })),
  NodeRuntime.runMain
)
