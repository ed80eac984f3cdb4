/**
 * What a running agent is given and what its output may fail with, apart
 * from the server's code that runs it, so that `AgentExecutor` (and the
 * index) can be imported by a client without loading a server.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as AgentExecutor from "../AgentExecutor.js"
import type * as Part from "../Part.js"

/** Output of an agent that is not JSON data, so the wire could not carry it. */
export class InvalidOutput extends Schema.TaggedError<InvalidOutput>("effect-a2a/InvalidOutput")("InvalidOutput", {
  path: Schema.String,
  found: Schema.String
}) {
  override get message(): string {
    return `The agent's output is not JSON data at ${this.path}: ${this.found}`
  }
}

/** Progress reporting available to a running agent; see `AgentExecutor.AgentProgress`. */
export class AgentProgress extends Context.Tag("effect-a2a/AgentExecutor/AgentProgress")<
  AgentProgress,
  {
    /** A WORKING status update with a text message. */
    readonly status: (text: string) => Effect.Effect<void>
    /** A WORKING status update with a data part. */
    readonly data: (data: Part.Json) => Effect.Effect<void>
    /** An artifact update. */
    readonly artifact: (artifact: Part.Artifact) => Effect.Effect<void>
    /** A durable agent's run: its steps are recorded, and it may ask and wait. */
    readonly [durable]?: Durable | undefined
  }
>() {}

/** The key of a durable run's {@link Durable} on its `AgentProgress`. */
export const durable: unique symbol = Symbol.for("effect-a2a/AgentExecutor/durable")

/** See `AgentExecutor.step` and `AgentExecutor.ask`. */
export interface Durable {
  readonly step: <A, I, E, IE, R>(
    name: string,
    effect: Effect.Effect<A, E, R>,
    schemas: AgentExecutor.StepSchemas<A, I, E, IE>
  ) => Effect.Effect<A, E, R>
  readonly ask: (question: string) => Effect.Effect<AgentExecutor.RequestMessage>
}

/** A run's durable side, when it has one: an agent with no `AgentProgress` (a test calling it) has none. */
const durableRun = Effect.map(
  Effect.serviceOption(AgentProgress),
  (progress) => Option.isSome(progress) ? progress.value[durable] : undefined
)

/** See `AgentExecutor.step`. */
export const step = <A, I, E, IE, R>(
  name: string,
  effect: Effect.Effect<A, E, R>,
  schemas: AgentExecutor.StepSchemas<A, I, E, IE>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(durableRun, (run) => run === undefined ? effect : run.step(name, effect, schemas))

/** See `AgentExecutor.ask`. */
export const ask = (question: string): Effect.Effect<AgentExecutor.RequestMessage, never, AgentProgress> =>
  Effect.flatMap(AgentProgress, (progress) => {
    const run = progress[durable]
    return run === undefined
      ? Effect.dieMessage("AgentExecutor.ask needs a durable agent: set the `durable` option of its server")
      : run.ask(question)
  })
