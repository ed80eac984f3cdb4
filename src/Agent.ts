/**
 * The one small interface every agent implements: local agents, remote
 * agents, guarded remote agents, the unavailable stub of a degraded start-up,
 * and the `Orchestrator` itself.
 *
 * An agent has a name, a description, and `run`: from an input text to a
 * stream of events whose last one is the {@link Result}.
 *
 * The error channel says whether failures are already explicit: an
 * `Agent<never>` (a local agent, a `GuardedRemoteAgent`, the unavailable
 * stub) ends every run in a `Result`, while {@link fromRemote} keeps the
 * typed `A2AClientError` for code that handles it itself.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type * as A2AClientError from "./A2AClientError.js"
import type * as AgentCardResolutionError from "./AgentCardResolutionError.js"
import * as internal from "./internal/agent/agent.js"
import type * as RemoteAgent from "./RemoteAgent.js"

/**
 * Progress reported while an agent runs.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Agent } from "effect-a2a"
 *
 * declare const booking: Agent.Agent
 * const result = Agent.result(booking, "book flight 4821", (progress: Agent.Progress) =>
 *   Effect.log(`${progress.agent}: ${progress.text}`))
 * ```
 * @category models
 * @since 0.1.0
 */
export const Progress: typeof internal.Progress = internal.Progress

/**
 * @category models
 * @since 0.1.0
 */
export type Progress = internal.Progress

/**
 * How a run ended. `text` is what a reader (a user, a parent model) should
 * see; for a remote agent `outcome` is the remote ending and `error` the
 * failed call, so code can match on them instead of parsing `text`.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { Agent } from "effect-a2a"
 *
 * const result = Agent.Result.make({ agent: "greeter", text: "hello", outcome: Option.none(), error: Option.none() })
 * ```
 * @category models
 * @since 0.1.0
 */
export const Result: typeof internal.Result = internal.Result

/**
 * @category models
 * @since 0.1.0
 */
export type Result = internal.Result

/**
 * What a run emits: any number of {@link Progress} events, then a
 * {@link Result}.
 *
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import { Agent } from "effect-a2a"
 *
 * declare const booking: Agent.Agent
 * // one line per event, for a terminal
 * const lines = Stream.map(booking.run("book flight 4821"), (event: Agent.Event) =>
 *   event._tag === "Progress" ? `... ${event.text}` : event.text)
 * ```
 * @category models
 * @since 0.1.0
 */
export const Event = Schema.Union(Progress, Result)

/**
 * @category models
 * @since 0.1.0
 */
export type Event = typeof Event.Type

/**
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import { Agent } from "effect-a2a"
 *
 * const echo: Agent.Agent = {
 *   name: "echo",
 *   description: "Repeats the input",
 *   run: (input) => Stream.make(Agent.textResult("echo", input))
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Agent<E = never, R = never> {
  readonly name: string
  readonly description: string
  /** Runs the agent on `input`; the last event of a stream that does not fail is a {@link Result}. */
  readonly run: (input: string) => Stream.Stream<Event, E, R>
}

/**
 * A {@link Result} of a local agent: text only.
 *
 * @example
 * ```ts
 * import { Agent } from "effect-a2a"
 *
 * const result = Agent.textResult("greeter", "hello")
 * result.outcome // Option.none(): no remote side behind it
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const textResult: (agent: string, text: string) => Result = internal.textResult

/**
 * A local agent from an Effect program. `progress` publishes a
 * {@link Progress} event at once.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Agent } from "effect-a2a"
 *
 * const weather = Agent.make({
 *   name: "weather",
 *   description: "Tells the weather of a city",
 *   run: (city, progress) => Effect.as(progress(`looking up ${city}`), `sunny in ${city}`)
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make: <E = never, R = never>(options: {
  readonly name: string
  readonly description: string
  readonly run: (input: string, progress: (text: string) => Effect.Effect<void>) => Effect.Effect<string, E, R>
}) => Agent<E, R> = internal.make

/**
 * The events of a run that reports progress as it goes and ends in a
 * {@link Result}: the progress first, as it happens, then the result.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Agent } from "effect-a2a"
 *
 * const events = Agent.eventsOf("planner", (progress) =>
 *   Effect.gen(function*() {
 *     yield* progress("searching flights")
 *     yield* progress("comparing prices")
 *     return Agent.textResult("planner", "flight 4821 is the cheapest")
 *   }))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const eventsOf: <E, R>(
  agent: string,
  run: (progress: (text: string) => Effect.Effect<void>) => Effect.Effect<Result, E, R>
) => Stream.Stream<Event, E, R> = internal.eventsOf

/**
 * A remote agent as an {@link Agent}, without a guard: WORKING status texts
 * become {@link Progress}, the outcome becomes the {@link Result} (its text
 * is the outcome's text, for a completed task with its data parts and its
 * artifacts' text and data), and a failed call stays a typed
 * `A2AClientError`. Use `GuardedRemoteAgent` to turn every ending into
 * explicit text.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Agent, RemoteAgent } from "effect-a2a"
 *
 * const program = Effect.map(RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:8000" }), Agent.fromRemote)
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const fromRemote: (
  remote: RemoteAgent.RemoteAgent,
  options?: { readonly description?: string | undefined }
) => Agent<A2AClientError.A2AClientError> = internal.fromRemote

/**
 * The stand-in for a remote agent whose card could not be resolved at
 * start-up: every run ends at once in a `REMOTE_UNAVAILABLE: the request was
 * not submitted ...` {@link Result} carrying the `Unavailable`
 * `A2AClientError`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Agent, RemoteAgent } from "effect-a2a"
 *
 * const booking = RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:8000" }).pipe(
 *   Effect.map((remote) => Agent.fromRemote(remote)),
 *   Effect.catchAll((cause) => Effect.succeed(Agent.unavailable(cause, "Books flights")))
 * )
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const unavailable: (
  cause: AgentCardResolutionError.AgentCardResolutionError,
  description?: string
) => Agent = internal.unavailable

/**
 * Runs an agent to its {@link Result}, handing every {@link Progress} to
 * `onProgress`. An agent whose stream ends without a result is a bug, so it
 * ends in a defect.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Agent } from "effect-a2a"
 *
 * declare const booking: Agent.Agent
 * const text = Effect.map(Agent.result(booking, "book flight 4821"), (result) => result.text)
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const result: <E, R, R2 = never>(
  agent: Agent<E, R>,
  input: string,
  onProgress?: (progress: Progress) => Effect.Effect<void, never, R2>
) => Effect.Effect<Result, E, R | R2> = internal.result
