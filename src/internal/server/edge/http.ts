/**
 * The server's HTTP edge: the card route, and the JSON-RPC route around the
 * dispatch (the body read and parsed, the answer written as JSON or as SSE,
 * the cause of a -32603 answer logged under an error id). What it shares
 * with the HTTP+JSON routes (`rest.ts`) is in `server/http/`.
 *
 * @internal
 */
import { A2A_VERSION_HEADER, AgentCard, formatSSEErrorEvent, SSE_HEADERS } from "@a2a-js/sdk"
import { LegacyRestTransportHandler } from "@a2a-js/sdk/compat/v0_3/server"
import { ContentTypeNotSupportedError, RequestMalformedError, UnsupportedOperationError } from "@a2a-js/sdk/errors"
import { ServerCallContext, type User } from "@a2a-js/sdk/server"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import { cardPath } from "../../serverErrors.js"
import * as EventId from "../../wire/eventId.js"
import * as internalAuthentication from "../caller/authentication.js"
import {
  type BodyReader,
  closingConnection,
  type Exchange,
  exchanged,
  notJson,
  opaqueText,
  parseJson,
  shuttingDown,
  type Started,
  type State
} from "../http/body.js"
import type * as internalLoad from "../http/load.js"
import { destroyer, sseStream } from "../http/sse.js"
import * as internalRpc from "../transport/rpc.js"

export { cardPath }

// What the routes share with the HTTP+JSON transport, read here by the server's other files and tests.
export { BodyReader, closingConnection, notJson, opaqueText, parseJson, shuttingDown, State }

// A string body goes to Node's `end` as is, with its length declared: one write with the headers,
// no re-encoding and no chunked framing (which Node would choose for a body of unknown length).
const jsonText = (text: string, status: number, headers: Record<string, string>) =>
  HttpServerResponse.raw(text, {
    status,
    contentType: "application/json",
    contentLength: Buffer.byteLength(text),
    headers
  })

const jsonResponse = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  jsonText(JSON.stringify(body), status, headers)

const versionHeader = A2A_VERSION_HEADER.toLowerCase()

// Our own refusals carry the ErrorInfo of the A2A error they stand for (spec 1.0.1 §3.3.2: SHOULD in `error.data`),
// under the JSON-RPC code the SDK would give it or the JSON-RPC code of the step that refused (parse, request).
const rpcError = (id: unknown, code: number, error: Error & { toErrorInfo(): unknown }, status = 200) =>
  jsonResponse({ jsonrpc: "2.0", id, error: { code, message: error.message, data: [error.toErrorInfo()] } }, status)

/**
 * How much of a body over the limit is read and dropped after its 413, and
 * for how long. A connection closed while its client still sends is reset,
 * and the reset takes the 413 with it; so the rest is read, as servers that
 * linger on close do, and only a body longer or slower than this has its
 * connection closed.
 *
 * @internal
 */
export const drainBytes = 16 * 1024 * 1024

/** @internal */
export const drainMillis = 5_000

// The body reader drains what is left (see `drainBytes`): the connection stays open for it.
const tooLarge = (message: string) =>
  rpcError(null, internalRpc.INVALID_PARAMS, new RequestMalformedError(message), 413)

/**
 * The body of any platform's request, from its stream, counted as it
 * arrives. Once over `maxBytes` the answer does not wait for the rest, which
 * is drained unread up to {@link drainBytes} and {@link drainMillis}: a
 * request body left unread would make the server reset the connection, and
 * the client would never see its 413. Past that bound the stream is let go,
 * which closes the connection.
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
        if (size <= maxBytes) {
          chunks.push(chunk)
          return Effect.void
        }
        return size > maxBytes + drainBytes ? Effect.interrupt : Deferred.succeed(over, undefined)
      })).pipe(Effect.forkDaemon)
    // The drain's time bound, counted from the moment the body went over.
    yield* Effect.raceFirst(Fiber.await(read), Effect.zipRight(Deferred.await(over), Effect.sleep(drainMillis))).pipe(
      Effect.zipRight(Fiber.interrupt(read)),
      Effect.forkDaemon
    )
    return yield* Effect.raceFirst(
      Deferred.await(over),
      Effect.map(
        Fiber.await(read),
        (exit) => Exit.isSuccess(exit) && size <= maxBytes ? concat(chunks, size) : undefined
      )
    )
  }))

const concat = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  const [only] = chunks
  if (chunks.length === 1 && only !== undefined) return only
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

/**
 * Whether a conditional request may be answered 304: `If-None-Match` names
 * `etag` (or `*`); without it, `If-Modified-Since` is not before
 * `lastModified`. As RFC 9110 §13.2.2 orders them: when `If-None-Match` is
 * present, `If-Modified-Since` is not read.
 *
 * @internal
 */
export const notModified = (
  headers: Readonly<Record<string, string | undefined>>,
  etag: string,
  lastModified: number
): boolean => {
  const ifNoneMatch = headers["if-none-match"]
  if (ifNoneMatch !== undefined) return ifNoneMatch.split(",").some((tag) => tag.trim() === etag || tag.trim() === "*")
  const ifModifiedSince = headers["if-modified-since"]
  if (ifModifiedSince === undefined) return false
  const since = Date.parse(ifModifiedSince)
  return Number.isFinite(since) && since >= lastModified
}

// Like the SDK's Express `agentCardHandler` with v0.3 compatibility: a
// request whose A2A-Version is absent or in [0.3, 1.0) gets the card in
// the v0.3 shape (the SDK's own conversion, the v1.0 interfaces embedded),
// any other the v1.0 card; each with its own ETag. The v1.0 card is its
// proto JSON (`AgentCard.toJSON`), the form it is signed in, not the SDK
// handler's `JSON.stringify` of its model: the SDK's canonical form drops
// that form's security schemes, so a signature would not cover them. The
// card does not change while the server runs, so it was last modified when
// the server started (HTTP dates have whole seconds).
const cardRoute = (card: AgentCard, cardMaxAge: number) =>
  Effect.gen(function*() {
    // Without a v0.3 interface (HTTP+JSON alone) there is no v0.3 card: every request gets the v1.0 one.
    const legacyCard = yield* Effect.tryPromise(() =>
      new LegacyRestTransportHandler({ getAuthenticatedExtendedAgentCard: () => Promise.resolve(card) } as never)
        .getAuthenticatedExtendedAgentCard(new ServerCallContext())
    ).pipe(Effect.option)
    const cardCacheControl = cardMaxAge > 0 ? `public, max-age=${cardMaxAge}` : "no-cache"
    const lastModified = Math.floor(Date.now() / 1000) * 1000
    const lastModifiedText = new Date(lastModified).toUTCString()
    const servedCard = (value: unknown) => {
      const body = JSON.stringify(value)
      const etag = `W/"${createHash("sha256").update(body).digest("hex").slice(0, 16)}"`
      return {
        body,
        etag,
        headers: {
          ETag: etag,
          "Last-Modified": lastModifiedText,
          "Cache-Control": cardCacheControl,
          Vary: A2A_VERSION_HEADER
        }
      }
    }
    const v1Card = servedCard(AgentCard.toJSON(card))
    const v03Card = Option.match(legacyCard, {
      onNone: () => v1Card,
      onSome: (legacy) => servedCard({ ...legacy, supportedInterfaces: structuredClone(card.supportedInterfaces) })
    })
    return Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      const served = isLegacyVersion(request.headers[versionHeader]) ? v03Card : v1Card
      if (notModified(request.headers, served.etag, lastModified)) {
        return HttpServerResponse.empty({ status: 304, headers: served.headers })
      }
      return jsonText(served.body, 200, served.headers)
    })
  })

// -32603 answers carry only an error id; what happened is logged under it.
// `thrown` is what was thrown, when known; otherwise the log has the error's message.
const sanitize = (error: internalRpc.RpcError, id: unknown, where: string, thrown?: unknown) =>
  error.code !== internalRpc.INTERNAL_ERROR
    ? Effect.succeed(error)
    : Effect.map(
      opaqueText("JSON-RPC", `${error.message}`, { where, requestId: String(id) }, thrown),
      (message): internalRpc.RpcError => ({ code: internalRpc.INTERNAL_ERROR, message })
    )

const sanitizeBody = (body: unknown, where: string, thrown?: unknown): Effect.Effect<unknown> => {
  if (typeof body === "object" && body !== null && "error" in body) {
    const response = body as internalRpc.RpcErrorResponse
    return Effect.map(sanitize(response.error, response.id, where, thrown), (error) => ({ ...response, error }))
  }
  return Effect.succeed(body)
}

// A JSON-RPC answer's result, where a streamed event is.
const resultOf = (body: unknown): unknown =>
  typeof body === "object" && body !== null && "result" in body ? body.result : undefined

const rpcSseStream = (
  dispatched: Extract<internalRpc.Dispatched, { _tag: "Stream" }>,
  destroy: (() => void) | undefined
) =>
  sseStream(
    { ...dispatched, destroy },
    (event) =>
      Effect.flatMap(sanitizeBody(event, "stream"), (body) =>
        Effect.try({
          try: () => EventId.sseEvent(body, EventId.sequenceOfJson(resultOf(body))),
          catch: identity
        })),
    (error) =>
      Effect.map(
        sanitize(dispatched.mapError(error), dispatched.id, "stream", error),
        (mapped) => formatSSEErrorEvent({ jsonrpc: "2.0", id: dispatched.id, error: mapped })
      )
  )

/**
 * What a JSON-RPC request comes to once read and dispatched: an answer
 * already made (a refusal), or the dispatch's outcome.
 *
 * @internal
 */
export type Received = HttpServerResponse.HttpServerResponse | internalRpc.Dispatched

// Over the bound: answered by its status, as JSON-RPC has no code for it; the client reads Refused, and when to come back.
const shed = () =>
  HttpServerResponse.text("Too many requests in flight; retry later.", { status: 429, headers: { "retry-after": "1" } })

/** The release of an admitted request's hold once its answer has ended. */
const releasing = (dispatched: Promise<internalRpc.Dispatched>, release: () => void): Promise<Received> =>
  dispatched.then((answer) => {
    if (answer._tag === "Json") release()
    else {
      const close = answer.close
      return { ...answer, close: () => (close(), release()), release }
    }
    return answer
  }, (error) => {
    release()
    throw error
  })

/**
 * What the JSON-RPC endpoint answers and calls, whatever server carries it:
 * the platform's route here, or the Node server's own listener
 * (`nodeListener.ts`).
 *
 * @internal
 */
export interface RpcEndpoint {
  readonly path: string
  readonly maxBodyBytes: number
  readonly dispatcher: internalRpc.Dispatcher
  readonly state: State
  readonly load: internalLoad.Load | undefined
  /** Who may call; undefined when anyone may. */
  readonly gate?: internalAuthentication.Gate | undefined
}

/**
 * The answer to a JSON-RPC request refused before its body is read (the
 * server closing, a content type not JSON), or `undefined`. A declared
 * length over the bound is the body reader's to refuse: it drains the rest.
 *
 * @internal
 */
export const refusedUnread = (
  endpoint: RpcEndpoint,
  headers: internalRpc.Headers
): HttpServerResponse.HttpServerResponse | undefined => {
  if (endpoint.state.closing) {
    // Refused before anything runs (UnsupportedOperation, not InternalError): a client may resend it to
    // another replica, or here after Retry-After, without an idempotency key.
    return HttpServerResponse.setHeader(
      rpcError(null, internalRpc.UNSUPPORTED_OPERATION, new UnsupportedOperationError(shuttingDown), 503),
      "retry-after",
      "1"
    )
  }
  const contentType = headers["content-type"]
  if (contentType !== undefined && (contentType.split(";", 1)[0] ?? "").trim().toLowerCase() !== "application/json") {
    return rpcError(
      null,
      -32005,
      new ContentTypeNotSupportedError("Unsupported Content-Type; expected application/json.")
    )
  }
  return undefined
}

/**
 * The answer to a request its credentials did not authenticate: 401 with
 * the challenge, and no JSON-RPC body (the request was not read, so its id
 * is not known), as a shed request's 429; or the 500 of an authenticator
 * that broke.
 *
 * @internal
 */
export const unauthenticated = (refused: internalAuthentication.Refused): HttpServerResponse.HttpServerResponse =>
  // The connection is closed, as for a body over the bound: what the caller still sends is not read.
  closingConnection(
    refused._tag === "Refusal"
      ? HttpServerResponse.text(refused.message, { status: 401, headers: { "www-authenticate": refused.challenge } })
      : jsonResponse({
        jsonrpc: "2.0",
        id: null,
        error: { code: internalRpc.INTERNAL_ERROR, message: refused.message }
      }, 500)
  )

/**
 * Authenticate (when the server does), then read, parse, admit and
 * dispatch in one promise: one wait per request. The body is read only
 * once the caller is known. `remoteAddress` is the caller's, for a bound
 * per caller when it is not authenticated.
 *
 * @internal
 */
export const receive = (
  endpoint: RpcEndpoint,
  read: () => Promise<Uint8Array | undefined>,
  headers: internalRpc.Headers,
  remoteAddress: string
): Promise<Received> => {
  const gate = endpoint.gate
  if (gate === undefined) return dispatchBody(endpoint, read(), headers, remoteAddress, undefined)
  return gate({ headers, method: "POST", transport: "JSONRPC", remoteAddress }).then((checked) =>
    internalAuthentication.isUser(checked)
      ? dispatchBody(endpoint, read(), headers, remoteAddress, checked)
      : unauthenticated(checked)
  )
}

// A notification gets no JSON-RPC answer (JSON-RPC 2.0 §4.1), and over HTTP that is a 204 without a body. It is
// not run either: every A2A method is a request whose answer is how its caller learns what happened (the task it
// made, a failure), so a run started by a notification could be neither followed nor cancelled, and would be work
// that no client of the protocol asks for. Answered before admission, it costs no place under the load bound.
const noAnswer = () => HttpServerResponse.empty({ status: 204 })

const dispatchBody = (
  endpoint: RpcEndpoint,
  body: Promise<Uint8Array | undefined>,
  headers: internalRpc.Headers,
  remoteAddress: string,
  user: User | undefined
): Promise<Received> =>
  body.then((bytes): Received | Promise<Received> => {
    if (bytes === undefined) {
      return tooLarge("Request body too large or unreadable.")
    }
    const body = parseJson(bytes)
    if (body === notJson) {
      return rpcError(null, internalRpc.PARSE_ERROR, new RequestMalformedError("Invalid JSON payload."))
    }
    const problem = internalRpc.requestProblem(body)
    if (problem !== undefined) return rpcError(null, internalRpc.INVALID_REQUEST, new RequestMalformedError(problem))
    if (!("id" in (body as object))) return noAnswer()
    const admitted = endpoint.load?.admit(body, internalAuthentication.loadKey(user, remoteAddress))
    if (admitted === "shed") return shed()
    const dispatched = endpoint.dispatcher.dispatch(body, headers, user)
    return admitted === undefined ? dispatched : releasing(dispatched, admitted)
  })

/**
 * The answer to what was received: a JSON answer with any -32603 made
 * opaque (its cause logged), or the SSE stream; `destroy` destroys its
 * connection, when it can be reached.
 *
 * @internal
 */
export const answer = (
  received: Received,
  destroy: (() => void) | undefined
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  if (HttpServerResponse.isServerResponse(received)) return Effect.succeed(received)
  if (received._tag === "Json") {
    return Effect.map(
      sanitizeBody(received.body, "response", received.cause),
      (sanitized) => jsonResponse(sanitized, received.status, received.headers)
    )
  }
  return Effect.succeed(HttpServerResponse.stream(rpcSseStream(received, destroy), {
    contentType: SSE_HEADERS["Content-Type"],
    headers: { ...SSE_HEADERS, ...received.headers }
  }))
}

/**
 * For a client gone before its answer: a stream that would have been
 * written is closed all the same, so that what it holds (the hold on a task
 * it continues, its place on the task's bus) is let go; one still waiting
 * for its first event is let go at once (see `Dispatcher.leave`).
 */
const abandon = (endpoint: RpcEndpoint, headers: internalRpc.Headers, received: Promise<Received>): void => {
  endpoint.dispatcher.leave?.(headers)
  received.then((dispatched) => {
    if (!HttpServerResponse.isServerResponse(dispatched) && dispatched._tag === "Stream") dispatched.close()
  }, () => undefined)
}

/**
 * The 500 answer to anything that went wrong outside the dispatch, its
 * cause logged under the error id it carries.
 *
 * @internal
 */
export const unexpected = (cause: Cause.Cause<unknown>): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.map(
    opaqueText("JSON-RPC", "", { where: "route" }, cause),
    (message) => jsonResponse({ jsonrpc: "2.0", id: null, error: { code: internalRpc.INTERNAL_ERROR, message } }, 500)
  )

/**
 * A JSON-RPC request taken, whatever server carries it: refused unread, or
 * received (`read` reads its body) and answered. `destroy` destroys its
 * connection, when it can be reached.
 *
 * @internal
 */
export const exchange = (
  endpoint: RpcEndpoint,
  headers: internalRpc.Headers,
  read: () => Promise<Uint8Array | undefined>,
  remoteAddress: string,
  destroy: (() => void) | undefined
): Started<Received> =>
  refusedUnread(endpoint, headers) ??
    new RpcExchange(receive(endpoint, read, headers, remoteAddress), endpoint, headers, destroy)

// Its state in fields, not closures: an exchange is held for as long as its request is in flight.
class RpcExchange implements Exchange<Received> {
  constructor(
    readonly received: Promise<Received>,
    private readonly endpoint: RpcEndpoint,
    private readonly headers: internalRpc.Headers,
    private readonly destroy: (() => void) | undefined
  ) {}

  answer(received: Received): Effect.Effect<HttpServerResponse.HttpServerResponse> {
    return answer(received, this.destroy)
  }

  abandon(): void {
    abandon(this.endpoint, this.headers, this.received)
  }
}

const rpcRoute = (endpoint: RpcEndpoint, readBody: BodyReader) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    // On Node, the platform's headers are the Node request's own object, not a copy.
    exchanged(
      () =>
        exchange(
          endpoint,
          request.headers,
          () => readBody(request, endpoint.maxBodyBytes),
          Option.getOrElse(request.remoteAddress, () => ""),
          destroyer(request)
        ),
      unexpected
    ))

/** @internal */
export interface Options {
  readonly card: AgentCard
  /** The card's `max-age`, in seconds; 0 sends `no-cache`. */
  readonly cardMaxAge: number
  /** The JSON-RPC endpoint; undefined when JSON-RPC is not served. */
  readonly rpc: RpcEndpoint | undefined
  readonly state: State
  /** Default: the platform's request stream ({@link platformBodyReader}). */
  readonly readBody?: BodyReader | undefined
}

/**
 * The server's routes: the card, and the JSON-RPC endpoint when served.
 *
 * @internal
 */
export const router = (options: Options) =>
  Effect.map(cardRoute(options.card, options.cardMaxAge), (serveCard) => {
    // A load balancer that checks the card learns that the server is going away.
    const closed = HttpServerResponse.text(shuttingDown, { status: 503, headers: { "retry-after": "1" } })
    const withCard = HttpRouter.get(
      HttpRouter.empty,
      cardPath,
      Effect.suspend(() => options.state.closing ? Effect.succeed(closed) : serveCard)
    )
    return options.rpc === undefined ? withCard : HttpRouter.post(
      withCard,
      options.rpc.path as HttpRouter.PathInput,
      rpcRoute(options.rpc, options.readBody ?? platformBodyReader)
    )
  })
