/**
 * A streaming answer's SSE bytes, on HTTP+JSON and JSON-RPC alike, and what
 * ends a stream whose reader was dropped for reading no more.
 *
 * @internal
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

const encoder = new TextEncoder()

/**
 * What a streaming answer holds once its first event is in: the rest comes
 * from `iterator`; `close` lets go of what the stream holds.
 *
 * @internal
 */
export interface OpenStream {
  readonly first: IteratorResult<unknown> | undefined
  readonly iterator: AsyncIterator<unknown>
  readonly close: () => void
  /** Resolves once the reader is dropped for reading no more (`handler/slowReader.ts`). */
  readonly dropped?: Promise<void> | undefined
  /** Lets go of the request's place in the load bound; `close` does too. */
  readonly release?: (() => void) | undefined
  /** Destroys the connection; undefined where the server's connection cannot be reached. */
  readonly destroy?: (() => void) | undefined
}

/**
 * How long after its drop a reader's HTTP connection may still hold the
 * typed end unwritten before it is destroyed: a client that reads takes it
 * at once, one that never reads would hold its connection forever.
 *
 * @internal
 */
export const unwrittenEndMillis = 5000

/**
 * What is left of a dropped reader: its stream ends with the typed end, but
 * that end is written only once the socket drains, and a client that never
 * reads never lets it drain, so its request would keep its place in the load
 * bound and its connection for as long as it stays. The place is let go at
 * the drop, as gRPC lets go of the call; if the end is still unwritten a
 * while later, the connection is destroyed (which ends the stream).
 */
const afterDrop = (open: OpenStream, dropped: Promise<void>) =>
  Effect.promise(() => dropped).pipe(
    Effect.tap(() => open.release?.()),
    Effect.zipRight(Effect.sleep(unwrittenEndMillis)),
    Effect.tap(() => open.destroy?.())
  )

/**
 * The connection of a request to a Node server, the platform's own or an
 * application's (its source is then the Node request), to destroy; none
 * elsewhere, where the application's server is left to close it.
 *
 * @internal
 */
export const destroyer = (request: HttpServerRequest.HttpServerRequest): (() => void) | undefined => {
  const socket = (request.source as { readonly socket?: { readonly destroy?: unknown } } | null | undefined)?.socket
  return typeof socket?.destroy === "function" ? () => (socket as { destroy: () => void }).destroy() : undefined
}

/**
 * A stream's SSE bytes: each event through `encode`, and a failure (of the
 * iterator or of `encode`) as one last event from `failed`.
 *
 * @internal
 */
export const sseStream = (
  open: OpenStream,
  encode: (event: unknown) => Effect.Effect<string, unknown>,
  failed: (error: unknown) => Effect.Effect<string>
) => {
  const { iterator } = open
  const head = open.first === undefined || open.first.done === true
    ? Stream.empty
    : Stream.succeed(open.first.value)
  const rest = open.first?.done === true ? Stream.empty : Stream.repeatEffectOption(
    Effect.tryPromise({ try: () => iterator.next(), catch: (error) => error }).pipe(
      Effect.mapError(Option.some),
      Effect.flatMap((next) => next.done === true ? Effect.fail(Option.none()) : Effect.succeed(next.value))
    )
  )
  const events = Stream.concat(head, rest).pipe(
    // An event that cannot be written ends the stream with an error event, like any failure.
    Stream.mapEffect(encode),
    Stream.catchAll((error) => Stream.fromEffect(failed(error))),
    Stream.map((text) => encoder.encode(text))
  )
  const { dropped } = open
  // Watched while the stream runs: one that ended (the end written, or the client gone) is not cut.
  const watched = dropped === undefined
    ? events
    : Stream.unwrapScoped(Effect.as(Effect.forkScoped(afterDrop(open, dropped)), events))
  return Stream.ensuring(watched, Effect.sync(open.close))
}
