/**
 * The server's HTTP edge: the card route, and the JSON-RPC route around the
 * dispatch (the body read and parsed, the answer written as JSON or as SSE,
 * the cause of a -32603 answer logged under an error id).
 *
 * @internal
 */
import { A2A_VERSION_HEADER, type AgentCard, formatSSEErrorEvent, formatSSEEvent, SSE_HEADERS } from "@a2a-js/sdk"
import { LegacyRestTransportHandler } from "@a2a-js/sdk/compat/v0_3/server"
import { ServerCallContext } from "@a2a-js/sdk/server"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Deferred, Effect, Exit, Fiber, Option, Stream } from "effect"
import { identity } from "effect/Function"
import { createHash } from "node:crypto"
import * as ErrorId from "../wire/errorId.js"
import * as internalFailure from "./failure.js"
import type * as internalLoad from "./load.js"
import * as internalRpc from "./rpc.js"

/** @internal */
export const cardPath = "/.well-known/agent-card.json"

const encoder = new TextEncoder()

// A string body goes to Node's `end` as is, with its length declared: one write with the headers,
// no re-encoding and no chunked framing (which Node would choose for a body of unknown length).
const jsonText = (text: string, status: number, headers: Record<string, string>) =>
  HttpServerResponse.raw(text, { status, contentType: "application/json", contentLength: Buffer.byteLength(text), headers })

const jsonResponse = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  jsonText(JSON.stringify(body), status, headers)

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false })
const versionHeader = A2A_VERSION_HEADER.toLowerCase()

const rpcError = (id: unknown, code: number, message: string, status = 200) =>
  jsonResponse({ jsonrpc: "2.0", id, error: { code, message } }, status)

// A refused body is not read on: the connection closes after the answer, instead of taking in the rest.
const tooLarge = (message: string) =>
  HttpServerResponse.setHeader(rpcError(null, internalRpc.INVALID_REQUEST, message, 413), "connection", "close")

/**
 * Reads a request's body: its bytes, or `undefined` when it is larger than
 * `maxBytes` or breaks off. A promise, so that reading, parsing and
 * dispatching are one wait for the fiber.
 *
 * @internal
 */
export type BodyReader = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) => Promise<Uint8Array | undefined>

/**
 * The body of any platform's request, from its stream, counted as it
 * arrives. Once over `maxBytes` the answer does not wait for the rest, which
 * is drained unread: a request body left unread would make the server
 * reset the connection, and the client would never see its 413.
 *
 * @internal
 */
export const platformBodyReader: BodyReader = (request, maxBytes) =>
  Effect.runPromise(Effect.gen(function*() {
    const chunks: Array<Uint8Array> = []
    let size = 0
    const over = yield* Deferred.make<undefined>()
    const read = yield* Stream.runForEach(request.stream, (chunk) =>
      Effect.suspend(() => {
        size += chunk.byteLength
        if (size <= maxBytes) chunks.push(chunk)
        return size > maxBytes ? Deferred.succeed(over, undefined) : Effect.void
      })).pipe(Effect.forkDaemon)
    return yield* Effect.raceFirst(
      Deferred.await(over),
      Effect.map(Fiber.await(read), (exit) => Exit.isSuccess(exit) && size <= maxBytes ? concat(chunks, size) : undefined)
    )
  }))

const concat = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  if (chunks.length === 1) return chunks[0]!
  const bytes = new Uint8Array(size)
  let at = 0
  for (const chunk of chunks) {
    bytes.set(chunk, at)
    at += chunk.byteLength
  }
  return bytes
}

/**
 * Whether an `A2A-Version` header asks for v0.3: absent, empty, or in
 * [0.3, 1.0), as the SDK's legacy card router decides it.
 *
 * @internal
 */
export const isLegacyVersion = (version: string | undefined): boolean => {
  if (version === undefined || version.trim() === "") return true
  const [major = "", minor = "0"] = version.trim().split(".")
  const majorNumber = Number.parseInt(major, 10)
  const minorNumber = Number.parseInt(minor, 10)
  if (!Number.isFinite(majorNumber) || majorNumber < 0 || !Number.isFinite(minorNumber) || minorNumber < 0) return false
  return majorNumber === 0 && minorNumber >= 3
}

// Like the SDK's Express `agentCardHandler` with v0.3 compatibility: a
// request whose A2A-Version is absent or in [0.3, 1.0) gets the card in
// the v0.3 shape (the SDK's own conversion, the v1.0 interfaces embedded),
// any other the v1.0 card; each with its own ETag.
const cardRoute = (card: AgentCard, cardMaxAge: number) =>
  Effect.gen(function* () {
    const legacyCard = yield* Effect.promise(() =>
      new LegacyRestTransportHandler({ getAuthenticatedExtendedAgentCard: () => Promise.resolve(card) } as never)
        .getAuthenticatedExtendedAgentCard(new ServerCallContext())
    )
    const cardCacheControl = cardMaxAge > 0 ? `public, max-age=${cardMaxAge}` : "no-cache"
    const servedCard = (value: unknown) => {
      const body = JSON.stringify(value)
      const etag = `W/"${createHash("sha256").update(body).digest("hex").slice(0, 16)}"`
      return { body, etag, headers: { ETag: etag, "Cache-Control": cardCacheControl, Vary: A2A_VERSION_HEADER } }
    }
    const v1Card = servedCard(card)
    const v03Card = servedCard({ ...legacyCard, supportedInterfaces: structuredClone(card.supportedInterfaces) })
    return Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      const served = isLegacyVersion(request.headers[versionHeader]) ? v03Card : v1Card
      const ifNoneMatch = request.headers["if-none-match"]
      if (
        ifNoneMatch !== undefined &&
        ifNoneMatch.split(",").some((tag) => tag.trim() === served.etag || tag.trim() === "*")
      ) {
        return HttpServerResponse.empty({ status: 304, headers: served.headers })
      }
      return jsonText(served.body, 200, served.headers)
    })
  })

// -32603 answers carry only an error id; what happened is logged under it.
// `thrown` is what was thrown, when known; otherwise the log has the error's message.
const sanitize = (error: internalRpc.RpcError, id: unknown, where: string, thrown?: unknown) => {
  if (error.code !== internalRpc.INTERNAL_ERROR) return Effect.succeed(error)
  // Already opaque: its cause was logged under that id where it happened.
  if (ErrorId.isInternalErrorText(error.message)) {
    return Effect.succeed<internalRpc.RpcError>({ code: error.code, message: error.message })
  }
  const errorId = ErrorId.make()
  const cause = thrown === undefined ? `${error.message}` : internalFailure.renderCause(Cause.die(thrown))
  return internalFailure.logErrorOffSpan("Unexpected error in the JSON-RPC endpoint", {
    errorId,
    where,
    requestId: String(id),
    cause
  }).pipe(
    Effect.as<internalRpc.RpcError>({ code: internalRpc.INTERNAL_ERROR, message: ErrorId.internalErrorText(errorId) })
  )
}

const sanitizeBody = (body: unknown, where: string, thrown?: unknown): Effect.Effect<unknown> => {
  if (typeof body === "object" && body !== null && "error" in body) {
    const response = body as internalRpc.RpcErrorResponse
    return Effect.map(sanitize(response.error, response.id, where, thrown), (error) => ({ ...response, error }))
  }
  return Effect.succeed(body)
}

const sseStream = (dispatched: Extract<internalRpc.Dispatched, { _tag: "Stream" }>) => {
  const { id, iterator, mapError } = dispatched
  const head = dispatched.first === undefined || dispatched.first.done === true
    ? Stream.empty
    : Stream.succeed(dispatched.first.value)
  const rest = dispatched.first?.done === true ? Stream.empty : Stream.repeatEffectOption(
    Effect.tryPromise({ try: () => iterator.next(), catch: (error) => error }).pipe(
      Effect.mapError(Option.some),
      Effect.flatMap((next) => next.done === true ? Effect.fail(Option.none()) : Effect.succeed(next.value))
    )
  )
  return Stream.concat(head, rest).pipe(
    // An event that cannot be written ends the stream with an error event, like any failure.
    Stream.mapEffect((event) =>
      Effect.flatMap(sanitizeBody(event, "stream"), (body) => Effect.try({ try: () => formatSSEEvent(body), catch: identity }))
    ),
    Stream.catchAll((error) =>
      Stream.fromEffect(Effect.map(
        sanitize(mapError(error), id, "stream", error),
        (mapped) => formatSSEErrorEvent({ jsonrpc: "2.0", id, error: mapped })
      ))
    ),
    Stream.map((text) => encoder.encode(text)),
    Stream.ensuring(Effect.sync(dispatched.close))
  )
}

type Received = HttpServerResponse.HttpServerResponse | internalRpc.Dispatched

// Over the bound: answered by its status, as JSON-RPC has no code for it; the client reads Refused, and when to come back.
const shed = () =>
  HttpServerResponse.text("Too many requests in flight; retry later.", { status: 429, headers: { "retry-after": "1" } })

/** The release of an admitted request's hold once its answer has ended. */
const releasing = (dispatched: Promise<internalRpc.Dispatched>, release: () => void): Promise<Received> =>
  dispatched.then((answer) => {
    if (answer._tag === "Json") release()
    else {
      const close = answer.close
      return { ...answer, close: () => (close(), release()) }
    }
    return answer
  }, (error) => {
    release()
    throw error
  })

// Read, parse and dispatch in one promise: one wait for the fiber per request.
const receive = (
  body: Promise<Uint8Array | undefined>,
  headers: internalRpc.Headers,
  dispatcher: internalRpc.Dispatcher,
  admit: ((body: unknown) => ReturnType<internalLoad.Load["admit"]>) | undefined
): Promise<Received> =>
  body.then((bytes): Received | Promise<Received> => {
    if (bytes === undefined) {
      return tooLarge("Request body too large or unreadable.")
    }
    let body: unknown
    try {
      body = JSON.parse(utf8.decode(bytes))
    } catch {
      return rpcError(null, internalRpc.PARSE_ERROR, "Invalid JSON payload.")
    }
    const admitted = admit?.(body)
    if (admitted === "shed") return shed()
    const dispatched = dispatcher.dispatch(body, headers)
    return admitted === undefined ? dispatched : releasing(dispatched, admitted)
  })

const rpcRoute = (
  dispatcher: internalRpc.Dispatcher,
  maxBodyBytes: number,
  state: State,
  readBody: BodyReader,
  load: internalLoad.Load | undefined
) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (state.closing) {
      // Refused before anything runs (UnsupportedOperation, not InternalError): a client may resend it to
      // another replica, or here after Retry-After, without an idempotency key.
      return Effect.succeed(HttpServerResponse.setHeader(
        rpcError(null, internalRpc.UNSUPPORTED_OPERATION, "The server is shutting down.", 503),
        "retry-after",
        "1"
      ))
    }
    // On Node, the platform's headers are the Node request's own object, not a copy.
    const headers: internalRpc.Headers = request.headers
    const contentType = headers["content-type"]
    if (contentType !== undefined && contentType.split(";", 1)[0]!.trim().toLowerCase() !== "application/json") {
      return Effect.succeed(rpcError(null, -32005, `Unsupported Content-Type; expected application/json.`))
    }
    const declared = Number(headers["content-length"])
    if (Number.isFinite(declared) && declared > maxBodyBytes) {
      return Effect.succeed(tooLarge("Request body too large."))
    }
    return Effect.suspend(() => {
      const admit = load === undefined
        ? undefined
        : (body: unknown) => load.admit(body, Option.getOrElse(request.remoteAddress, () => ""))
      const received = receive(readBody(request, maxBodyBytes), headers, dispatcher, admit)
      return Effect.flatMap(Effect.promise(() => received), (dispatched) => {
        if (HttpServerResponse.isServerResponse(dispatched)) return Effect.succeed(dispatched)
        if (dispatched._tag === "Json") {
          return Effect.map(
            sanitizeBody(dispatched.body, "response", dispatched.cause),
            (sanitized) => jsonResponse(sanitized, dispatched.status, dispatched.headers)
          )
        }
        return Effect.succeed(HttpServerResponse.stream(sseStream(dispatched), {
          contentType: SSE_HEADERS["Content-Type"],
          headers: { ...SSE_HEADERS, ...dispatched.headers }
        }))
      }).pipe(
        // A client gone before its answer: a stream that would have been written is closed all the same,
        // so that what it holds (the hold on a task it continues, its place on the task's bus) is let go.
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            received.then((dispatched) => {
              if (!HttpServerResponse.isServerResponse(dispatched) && dispatched._tag === "Stream") dispatched.close()
            }, () => undefined)
          })
        )
      )
    })
  }).pipe(
    Effect.catchAllCause((cause) => {
      const errorId = ErrorId.make()
      return internalFailure.logErrorOffSpan("Unexpected error in the JSON-RPC endpoint", {
        errorId,
        cause: internalFailure.renderCause(cause)
      }).pipe(
        Effect.as(rpcError(null, internalRpc.INTERNAL_ERROR, ErrorId.internalErrorText(errorId), 500))
      )
    })
  )

/**
 * What the server's lifetime tells the edge.
 *
 * @internal
 */
export interface State {
  /** Set when the server closes: JSON-RPC requests are then refused with 503. */
  readonly closing: boolean
}

/** @internal */
export interface Options {
  readonly card: AgentCard
  /** The card's `max-age`, in seconds; 0 sends `no-cache`. */
  readonly cardMaxAge: number
  readonly rpcPath: string
  readonly maxBodyBytes: number
  readonly dispatcher: internalRpc.Dispatcher
  readonly state: State
  /** Default: the platform's request stream ({@link platformBodyReader}). */
  readonly readBody?: BodyReader | undefined
  /** The bound on work in flight, if any. */
  readonly load?: internalLoad.Load | undefined
}

/**
 * The server's routes: the card, and the JSON-RPC endpoint.
 *
 * @internal
 */
export const router = (options: Options) =>
  Effect.map(cardRoute(options.card, options.cardMaxAge), (serveCard) =>
    HttpRouter.empty.pipe(
      HttpRouter.get(cardPath, serveCard),
      HttpRouter.post(options.rpcPath as HttpRouter.PathInput, rpcRoute(options.dispatcher, options.maxBodyBytes, options.state, options.readBody ?? platformBodyReader, options.load)
      )
    ))
