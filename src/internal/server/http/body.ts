/**
 * What the JSON-RPC route (`edge/http.ts`) and the HTTP+JSON routes
 * (`transport/rest.ts`) share of a request and its answer: the body as
 * JSON, a refusal that closes its connection, the server's closing state,
 * the opaque text of an internal error, and an exchange (a request taken,
 * its answer) as the platform's router serves it; `edge/nodeListener.ts`
 * serves the same exchanges on `A2AServer.make`'s Node server.
 *
 * @internal
 */
import { A2AError } from "@a2a-js/sdk/errors"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as internalCauses from "../../observability/causes.js"
import * as ErrorId from "../../wire/errorId.js"

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false })

/** What {@link parseJson} returns for bytes that are not UTF-8 JSON. @internal */
export const notJson: unique symbol = Symbol("notJson")

/** A body's JSON value, or {@link notJson}. @internal */
export const parseJson = (bytes: Uint8Array): unknown => {
  try {
    return JSON.parse(utf8.decode(bytes))
  } catch {
    return notJson
  }
}

/** The header that closes a connection after its answer: a body refused unread is not taken in. @internal */
export const closingHeader = { connection: "close" } as const

/** `response`, closing its connection after it ({@link closingHeader}). @internal */
export const closingConnection = (response: HttpServerResponse.HttpServerResponse) =>
  HttpServerResponse.setHeaders(response, closingHeader)

/**
 * Reads a request's body: its bytes, or `undefined` when it is larger than
 * `maxBytes` or breaks off. A promise, so that reading, parsing and
 * dispatching are one wait for the fiber.
 *
 * @internal
 */
export type BodyReader = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number
) => Promise<Uint8Array | undefined>

/**
 * What an endpoint makes of a request it takes, on whatever server carries
 * it: what was received (read, checked, admitted, the call started) as one
 * promise, the answer to it, and what lets go of what an answer not written
 * holds (a stream's hold on its task, its place in the load bound) when the
 * client leaves before it.
 *
 * @internal
 */
export interface Exchange<R> {
  readonly received: Promise<R>
  answer(received: R): Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** Called once, at once, when the client leaves: what waits for `received` waits on its own. */
  abandon(): void
}

/**
 * An exchange, or the answer to a request refused before anything of it
 * was read.
 *
 * @internal
 */
export type Started<R> = HttpServerResponse.HttpServerResponse | Exchange<R>

/**
 * An exchange answered on the platform's request fiber. `start` runs where
 * the fiber cannot be interrupted, and what it started is abandoned on an
 * interruption from then on: no client that leaves, however early, keeps
 * what its request took. Whatever goes wrong outside the endpoint's own
 * answers is `unexpected`'s.
 *
 * @internal
 */
export const exchanged = <R>(
  start: () => Started<R>,
  unexpected: (cause: Cause.Cause<unknown>) => Effect.Effect<HttpServerResponse.HttpServerResponse>
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.uninterruptibleMask((restore) => {
    const started = start()
    if (HttpServerResponse.isServerResponse(started)) return Effect.succeed(started)
    return Effect.onInterrupt(
      restore(Effect.flatMap(Effect.promise(() => started.received), (received) => started.answer(received))),
      () => Effect.sync(() => started.abandon())
    )
  }).pipe(Effect.catchAllCause(unexpected))

/** @internal */
export const shuttingDown = "The server is shutting down."

/**
 * What the server's lifetime tells the edge.
 *
 * @internal
 */
export interface State {
  /** Set when the server closes: requests (JSON-RPC and HTTP+JSON) are then refused with 503. */
  readonly closing: boolean
}

/**
 * The one place an unexpected error is logged, on every transport: under
 * "Unexpected error in the <endpoint> endpoint", with its error id and its
 * cause; the caller gets only the id (`ErrorId.internalErrorText`).
 *
 * The only text a caller gets of an internal error: `message` itself when
 * it is already opaque (its cause was logged under that id where it
 * happened), otherwise a new error id, under which the cause is logged
 * (`thrown` when known, else `message`).
 *
 * @internal
 */
export const opaqueText = (
  endpoint: string,
  message: string,
  annotations: Record<string, string>,
  thrown?: unknown
): Effect.Effect<string> => {
  if (ErrorId.isInternalErrorText(message)) return Effect.succeed(message)
  const errorId = ErrorId.make()
  const cause = thrown === undefined
    ? message
    : internalCauses.renderCause(Cause.isCause(thrown) ? thrown : Cause.die(thrown))
  return internalCauses.logErrorOffSpan(`Unexpected error in the ${endpoint} endpoint`, {
    errorId,
    ...annotations,
    cause
  })
    .pipe(Effect.as(ErrorId.internalErrorText(errorId)))
}

/**
 * What a caller may be told of a failed call: an A2A error as it is (but the
 * SDK's base one, its internal error), or an error already opaque; anything
 * else is logged whole by {@link opaqueText} and becomes an `Error` that
 * carries only its error id.
 *
 * @internal
 */
export const opaqueFailure = (
  endpoint: string,
  cause: Cause.Cause<unknown>,
  annotations: Record<string, string>
): Effect.Effect<unknown> => {
  const error = Cause.squash(cause)
  if (error instanceof A2AError && error.reason !== "INTERNAL_ERROR") return Effect.succeed(error)
  const message = error instanceof Error ? error.message : String(error)
  return ErrorId.isInternalErrorText(message)
    ? Effect.succeed(error)
    : Effect.map(opaqueText(endpoint, message, annotations, cause), (text) => new Error(text))
}
