/**
 * The code behind `Agent`: its events, the streams of a run, and the reading
 * of a remote event stream that both the unguarded `fromRemote` and the guard
 * use.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Mailbox from "effect/Mailbox"
import * as Match from "effect/Match"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as A2AClientError from "../../A2AClientError.js"
import type { Agent, Event } from "../../Agent.js"
import type * as AgentCardResolutionError from "../../AgentCardResolutionError.js"
import type * as RemoteAgent from "../../RemoteAgent.js"
import type * as RemoteEvent from "../../RemoteEvent.js"
import * as RemoteOutcome from "../../RemoteOutcome.js"
import * as remoteAgent from "../client/remoteAgent.js"
import { CircuitOpen } from "../client/resilience/circuitOpen.js"
import * as guard from "./guard.js"

/** @internal */
export class Progress extends Schema.TaggedClass<Progress>("effect-a2a/Agent/Progress")("Progress", {
  agent: Schema.String,
  text: Schema.String
}) {}

/** @internal */
export class Result extends Schema.TaggedClass<Result>("effect-a2a/Agent/Result")("Result", {
  agent: Schema.String,
  text: Schema.String,
  outcome: Schema.Option(RemoteOutcome.RemoteOutcome),
  error: Schema.Option(Schema.Union(A2AClientError.A2AClientError, CircuitOpen))
}) {}

/** @internal */
export const textResult = (agent: string, text: string): Result =>
  Result.make({ agent, text, outcome: Option.none(), error: Option.none() })

/**
 * The events of a run that hands on each {@link Progress} as it happens and
 * ends in a {@link Result}; the progress may be another agent's, as the
 * orchestrator forwards its sub-agents'.
 *
 * @internal
 */
export const progressStream = <E, R>(
  run: (progress: (progress: Progress) => Effect.Effect<void>) => Effect.Effect<Result, E, R>
): Stream.Stream<Event, E, R> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const mailbox = yield* Mailbox.make<Event, E>()
    yield* run((progress) => Effect.asVoid(mailbox.offer(progress))).pipe(
      Effect.flatMap((result) => mailbox.offer(result)),
      Mailbox.into(mailbox),
      Effect.forkScoped
    )
    return Mailbox.toStream(mailbox)
  }))

/** @internal */
export const eventsOf = <E, R>(
  agent: string,
  run: (progress: (text: string) => Effect.Effect<void>) => Effect.Effect<Result, E, R>
): Stream.Stream<Event, E, R> => progressStream((progress) => run((text) => progress(Progress.make({ agent, text }))))

/** @internal */
export const make = <E = never, R = never>(options: {
  readonly name: string
  readonly description: string
  readonly run: (input: string, progress: (text: string) => Effect.Effect<void>) => Effect.Effect<string, E, R>
}): Agent<E, R> => ({
  name: options.name,
  description: options.description,
  run: (input) =>
    eventsOf(
      options.name,
      (progress) => Effect.map(options.run(input, progress), (text) => textResult(options.name, text))
    )
})

/**
 * What an event of a remote stream is to a parent: a non-empty WORKING
 * status text is progress, `Finished` brings the outcome, and artifact
 * chunks are read from the outcome instead.
 */
const readEvent = Match.type<RemoteEvent.RemoteEvent>().pipe(
  Match.tagsExhaustive({
    Status: (e): { readonly progress: string } | undefined => guard.nonEmpty(e.text) ? { progress: e.text } : undefined,
    Artifact: () => undefined,
    Finished: (e) => ({ outcome: e.outcome })
  })
)

/**
 * Runs the event stream of a remote agent to its outcome, handing each
 * progress text to `progress`.
 *
 * @internal
 */
export const foldRemote = <E, R>(
  agent: string,
  events: Stream.Stream<RemoteEvent.RemoteEvent, E, R>,
  progress: (text: string) => Effect.Effect<void>
): Effect.Effect<RemoteOutcome.RemoteOutcome, E, R> =>
  events.pipe(
    Stream.runFoldEffect(Option.none<RemoteOutcome.RemoteOutcome>(), (last, event) => {
      const read = readEvent(event)
      return read === undefined
        ? Effect.succeed(last)
        : "outcome" in read
        ? Effect.succeed(Option.some(read.outcome))
        : Effect.as(progress(read.progress), last)
    }),
    Effect.flatMap(Option.match({
      // RemoteAgent ends every stream that does not fail with Finished
      onNone: () => Effect.dieMessage(`remote agent ${agent}: stream ended without an outcome`),
      onSome: Effect.succeed
    }))
  )

/**
 * A remote agent as an agent, its stream read as it comes: each event is
 * handed on when the parent pulls it.
 *
 * @internal
 */
export const fromRemote = (
  remote: RemoteAgent.RemoteAgent,
  options: { readonly description?: string | undefined } = {}
): Agent<A2AClientError.A2AClientError> => {
  const agent = remote.name
  const toEvent = (event: RemoteEvent.RemoteEvent): Option.Option<Event> => {
    const read = readEvent(event)
    if (read === undefined) return Option.none()
    if (!("outcome" in read)) return Option.some(Progress.make({ agent, text: read.progress }))
    const outcome = read.outcome
    return Option.some(Result.make({
      agent,
      text: outcome._tag === "Completed" ? guard.completedText(outcome) : outcome.text,
      outcome: Option.some(outcome),
      error: Option.none()
    }))
  }
  return {
    name: agent,
    description: guard.describeRemote(remote, options.description),
    run: (input) => Stream.filterMap(remote.stream(input), toEvent)
  }
}

/**
 * The stand-in for a remote agent whose card could not be resolved: it runs
 * the unavailable stub of `RemoteAgent`, whose every call fails at once.
 *
 * @internal
 */
export const unavailable = (
  cause: AgentCardResolutionError.AgentCardResolutionError,
  description?: string
): Agent => {
  const remote = remoteAgent.unavailable(cause)
  return {
    name: remote.name,
    description: description ?? `The remote agent ${remote.name} (unavailable)`,
    run: (input) =>
      Stream.fromEffect(
        remote.send(input).pipe(
          Effect.either,
          Effect.flatMap((either) =>
            either._tag === "Left"
              ? Effect.succeed(Result.make({
                agent: remote.name,
                text: guard.errorText(either.left),
                outcome: Option.none(),
                error: Option.some(either.left)
              }))
              : Effect.dieMessage(`the unavailable agent ${remote.name} answered`)
          )
        )
      )
  }
}

/** @internal */
export const result = <E, R, R2 = never>(
  agent: Agent<E, R>,
  input: string,
  onProgress: (progress: Progress) => Effect.Effect<void, never, R2> = () => Effect.void
): Effect.Effect<Result, E, R | R2> =>
  agent.run(input).pipe(
    Stream.runFoldEffect(Option.none<Result>(), (last, event) =>
      Match.value(event).pipe(
        Match.tagsExhaustive({
          Progress: (progress) => Effect.as(onProgress(progress), last),
          Result: (result) => Effect.succeed(Option.some(result))
        })
      )),
    Effect.flatMap(Option.match({
      onNone: () => Effect.dieMessage(`agent ${agent.name} ended without a result`),
      onSome: Effect.succeed
    }))
  )
