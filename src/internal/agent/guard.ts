/**
 * The text the parent model reads of every ending of a remote call. Pure
 * functions, shared by `GuardedRemoteAgent`, `Agent.fromRemote` and the
 * unavailable stub of `Agent`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Match from "effect/Match"
import * as Option from "effect/Option"
import * as A2AClientError from "../../A2AClientError.js"
import * as FailureHint from "../../FailureHint.js"
import * as Part from "../../Part.js"
import type { RemoteAgent } from "../../RemoteAgent.js"
import * as RemoteOutcome from "../../RemoteOutcome.js"
import { answerStatus } from "../client/call/answerStatus.js"
import type { CircuitOpen } from "../client/resilience/circuitOpen.js"
import * as ErrorId from "../wire/errorId.js"

export const FAILED = "REMOTE_FAILED"
export const UNAVAILABLE = "REMOTE_UNAVAILABLE"
export const REFUSED = "REMOTE_REFUSED"
export const CANCELED = "REMOTE_CANCELED"
export const REJECTED = "REMOTE_REJECTED"
export const INPUT_REQUIRED = "REMOTE_INPUT_REQUIRED"
export const AUTH_REQUIRED = "REMOTE_AUTH_REQUIRED"
export const CIRCUIT_OPEN = "REMOTE_CIRCUIT_OPEN"

export const markers = [
  FAILED,
  UNAVAILABLE,
  REFUSED,
  CANCELED,
  REJECTED,
  INPUT_REQUIRED,
  AUTH_REQUIRED,
  CIRCUIT_OPEN
] as const

export type Marker = typeof markers[number]

export type GuardError = A2AClientError.A2AClientError | CircuitOpen

export const nonEmpty = (text: string): boolean => text.trim() !== ""

const withText = (marker: Marker, text: string): string => nonEmpty(text) ? `${marker} ${text}` : marker

/** The most of one data part a completed text holds: a reader's context is not for bulk data. */
export const maxDataChars = 2000

// Data read from the wire is JSON, so it is written back as compact JSON.
const dataText = (data: unknown): string => {
  const json = JSON.stringify(data)
  return json.length <= maxDataChars ? json : `${json.slice(0, maxDataChars)}… [cut: ${json.length} characters in all]`
}

// A part without content is read as null data: it tells the reader nothing.
const partsText = (text: string, parts: ReadonlyArray<Part.Part>): ReadonlyArray<string> => [
  text,
  ...parts.flatMap((part) => (part._tag === "Data" && part.data != null ? [dataText(part.data)] : []))
]

/**
 * The status text of a completed task and its data parts, then each
 * artifact's text and data parts; data as compact JSON, each part cut at
 * {@link maxDataChars}.
 */
export const completedText = (outcome: RemoteOutcome.Completed): string =>
  [
    ...partsText(outcome.text, outcome.parts),
    ...outcome.artifacts.flatMap((artifact) => partsText(Part.textOf(artifact.parts), artifact.parts))
  ].filter(nonEmpty).join("\n")

const failedText = (outcome: RemoteOutcome.Failed): string => {
  const text = nonEmpty(outcome.text) ? outcome.text : "the remote task failed"
  const errorId = RemoteOutcome.errorIdOf(outcome)
  // the id must reach the reader even when the status text did not carry it
  const withId = Option.match(errorId, {
    onNone: () => text,
    onSome: (id) => text.includes(id) ? text : ErrorId.withErrorId(text, id)
  })
  const withHint = Option.match(outcome.hint, {
    onNone: () => withId,
    onSome: (hint) => {
      const suffix = FailureHint.suffix(hint)
      return withId.includes(suffix) ? withId : `${withId} ${suffix}`
    }
  })
  return `${FAILED} ${withHint}`
}

/** The text of an outcome; exhaustive, so a new outcome does not compile until it has a text. */
export const outcomeText = (
  outcome: RemoteOutcome.RemoteOutcome,
  completed: (outcome: RemoteOutcome.Completed) => string = completedText
): string =>
  RemoteOutcome.$match({
    Completed: completed,
    Failed: failedText,
    Canceled: (o) => withText(CANCELED, o.text),
    Rejected: (o) => withText(REJECTED, nonEmpty(o.text) ? o.text : "the agent refused the task without a reason"),
    InputRequired: (o) => withText(INPUT_REQUIRED, o.text),
    AuthRequired: (o) => withText(AUTH_REQUIRED, o.text)
  })(outcome)

const reasonText = A2AClientError.matchReason({
  ConnectionRefused: () => "the connection was refused",
  ConnectionLost: () => "the connection was lost",
  Timeout: () => "the call timed out",
  Aborted: () => "the call was aborted",
  HttpStatus: (e) =>
    e.status !== undefined
      ? `the server answered HTTP ${e.status}`
      : e.grpcStatus !== undefined
      ? `the server answered gRPC ${e.grpcStatus}`
      : "the server answered with an HTTP error or a redirect",
  ProtocolError: (e) =>
    `the agent answered with a protocol error${e.code === undefined ? "" : ` ${e.code}`}${
      e.protocolError === undefined ? "" : ` ${e.protocolError}`
    }`,
  InvalidResponse: () => "the response could not be read",
  StreamInterrupted: () => "the stream was interrupted",
  Unavailable: () => "the agent was not available at start-up",
  InvalidRequest: () => "the request could not be sent as it is"
})

// whole seconds, rounded up: a reader needs "20s", not "19s 999ms"
const seconds = (duration: Duration.Duration): string =>
  Duration.format(Duration.seconds(Math.ceil(Duration.toMillis(duration) / 1000)))

const retryText = (retryAfter: Duration.Duration | undefined): string =>
  retryAfter === undefined || Duration.toMillis(retryAfter) <= 0 ? "" : `, retry after ${seconds(retryAfter)}`

const causeText = (e: A2AClientError.A2AClientError) => `(${e.agent}: ${reasonText(e)}${retryText(e.retryAfter)})`

/**
 * Why a refusal without an A2A error was for the caller's credentials, on
 * any transport (gRPC's UNAUTHENTICATED and PERMISSION_DENIED read as 401
 * and 403): the remote is up, and the same call fails again until the
 * credentials change, which only the caller's operator can do.
 */
const authenticationText = (e: A2AClientError.A2AClientError): string => {
  if (e.protocolError !== undefined) return ""
  const status = answerStatus(e)
  return status === 401
    ? " for authentication (no valid credentials were given)"
    : status === 403
    ? " for authentication (the credentials given do not allow it)"
    : ""
}

// "not submitted" is a promise that nothing happened remotely, so it is only said when the client proved the
// request never left this process; "nothing ran" only when the server answered so.
const clientErrorText = A2AClientError.matchDelivery({
  NotSent: (e) => `${UNAVAILABLE}: the request was not submitted ${causeText(e)}`,
  Refused: (e) =>
    `${REFUSED} ${
      e.protocolError ??
        (e.status === undefined && e.grpcStatus !== undefined ? `gRPC ${e.grpcStatus}` : `HTTP ${e.status ?? "error"}`)
    }: the request was refused${authenticationText(e)}; nothing ran ${causeText(e)}`,
  Unknown: (e) =>
    e.taskId === undefined
      ? `${UNAVAILABLE}: the outcome is unknown: no task was confirmed ${causeText(e)}`
      : `${UNAVAILABLE}: the outcome is unknown: the ending of task ${e.taskId} was not received ${causeText(e)}`
})

/** The text of a failed call; exhaustive over the error types, their deliveries and their reasons. */
export const errorText = (error: GuardError): string =>
  Match.value(error).pipe(
    Match.tagsExhaustive({
      A2AClientError: clientErrorText,
      CircuitOpen: (e) =>
        e.state === "Open" && Duration.toMillis(e.retryAfter) > 0
          ? `${CIRCUIT_OPEN} retry after ${
            seconds(e.retryAfter)
          }: the request was not submitted (${e.agent} failed repeatedly)`
          : `${CIRCUIT_OPEN} retry shortly: the request was not submitted (${e.agent} failed repeatedly)`
    })
  )

/** The marker a text starts with, if any. */
export const markerOf = (text: string): Option.Option<Marker> =>
  Option.fromNullable(
    markers.find((marker) => text === marker || text.startsWith(`${marker} `) || text.startsWith(`${marker}:`))
  )

/** The description of a remote agent: the given one, else its card's. */
export const describeRemote = (remote: RemoteAgent, description: string | undefined): string =>
  description ??
    Option.match(remote.card, {
      onNone: () => `The remote agent ${remote.name}`,
      onSome: (card) => nonEmpty(card.description) ? card.description : `The remote agent ${remote.name}`
    })
