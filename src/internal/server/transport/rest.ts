/**
 * The HTTP+JSON (REST) binding of A2A v1.0 on the same router as JSON-RPC,
 * as the SDK's Express `restHandler` serves it: the same routes, the same
 * ProtoJSON converters (exported from the SDK's root), the same
 * `google.rpc.Status` error bodies. It calls the request handler the
 * JSON-RPC dispatch calls, with its refusals (one run per task, stored ids,
 * subscriptions), and the same load accounting, body limit and shutdown.
 *
 * The SDK keeps its `RestTransportHandler` private; the few lines of it
 * that check a request are copied here, and a test shows our answers equal
 * the SDK's own `restHandler`'s. Unlike the SDK's, an error that is not an
 * A2A error never puts its message on the wire: it is logged under an error
 * id, and the answer carries only that id.
 *
 * @internal
 */
import {
  A2A_CONTENT_TYPE,
  A2A_VERSION_HEADER,
  type AgentCard,
  Extensions,
  formatSSEErrorEvent,
  HTTP_EXTENSION_HEADER,
  SSE_HEADERS,
  StreamResponse
} from "@a2a-js/sdk"
import {
  A2AError,
  ContentTypeNotSupportedError,
  ERROR_INFO_TYPE,
  RequestMalformedError,
  type RestErrorBody,
  UnsupportedOperationError
} from "@a2a-js/sdk/errors"
import {
  defaultServerCallContextBuilder,
  type ServerCallContext,
  UnauthenticatedUser,
  type User,
  validateVersion
} from "@a2a-js/sdk/server"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import * as ErrorTable from "../../wire/errorTable.js"
import * as EventId from "../../wire/eventId.js"
import * as internalNesting from "../../wire/nesting.js"
import * as internalAuthentication from "../caller/authentication.js"
import type { RequestHandler } from "../handler/core.js"
import type * as internalSubscription from "../handler/subscription.js"
import * as internalAccept from "../http/accept.js"
import * as internalHttp from "../http/body.js"
import type * as internalLoad from "../http/load.js"
import * as internalSse from "../http/sse.js"
import { type Call, match, type Matched, type Query, type Route } from "./restRoutes.js"

/** The default base path of the HTTP+JSON routes. @internal */
export const defaultPath = "/a2a/rest"

const jsonContentType = "application/json"
const versionHeader = A2A_VERSION_HEADER.toLowerCase()
const extensionHeader = HTTP_EXTENSION_HEADER.toLowerCase()

/** A `google.rpc.Status` body, as the SDK writes it. */
type StatusBody = RestErrorBody

// A refusal: its Status body under its own HTTP status.
const statusAnswer = (body: StatusBody, headers: Record<string, string> = {}): Received => ({
  _tag: "Json",
  status: body.error.code,
  body,
  headers
})

/** A body of the error table's `row`. */
const tableBody = (row: ErrorTable.Row, message: string, details: StatusBody["error"]["details"]): StatusBody => ({
  error: { code: row.http, status: row.httpStatus, message, details }
})

/**
 * An A2A error's body: its HTTP status and status name from the error
 * table, by its reason, and its ErrorInfo.
 *
 * @internal
 */
export const a2aErrorBody = (error: A2AError): StatusBody =>
  tableBody(ErrorTable.ofReason(error.reason) ?? ErrorTable.rows.InternalError, error.message, [error.toErrorInfo()])

// An A2A error's body under another HTTP status than the SDK gives it: what refused it was the HTTP edge.
const edgeBody = (error: A2AError, code: number, status: string): StatusBody => ({
  error: { ...a2aErrorBody(error).error, code, status }
})

// The SDK's base `A2AError` (reason INTERNAL_ERROR) is its internal error: what it says is not the client's.
const isA2AError = (error: unknown): error is A2AError => error instanceof A2AError && error.reason !== "INTERNAL_ERROR"

/**
 * The body of any error: an A2A error's own, anything else 500 INTERNAL with
 * only an error id (its cause logged under it).
 */
const errorBody = (error: unknown, where: string): Effect.Effect<StatusBody> =>
  isA2AError(error)
    ? Effect.succeed(a2aErrorBody(error))
    : Effect.map(
      internalHttp.opaqueText("HTTP+JSON", error instanceof Error ? error.message : String(error), { where }, error),
      (text) => edgeBody(new A2AError(text), 500, "INTERNAL")
    )

const malformed = (message: string) => statusAnswer(a2aErrorBody(new RequestMalformedError(message)))

// The body reader drains what is left (see `drainBytes`): the connection stays open for it.
const tooLarge = (message: string) =>
  statusAnswer(edgeBody(new RequestMalformedError(message), 413, "INVALID_ARGUMENT"))

// The ErrorInfo of an error no A2A reason says: the status's own, in our domain, so that no client reads it as an A2A error.
const ownErrorInfo = (reason: string) => ({ "@type": ERROR_INFO_TYPE, reason, domain: "effect-a2a" })

// Over the bound: 429 and when to come back, as on JSON-RPC. No A2A reason says it, so the ErrorInfo's is
// the status's own, in our domain (no client reads it as an A2A error); RetryInfo says what Retry-After says.
const shed = () =>
  statusAnswer({
    error: {
      code: 429,
      status: "RESOURCE_EXHAUSTED",
      message: "Too many requests in flight; retry later.",
      details: [
        ownErrorInfo("RESOURCE_EXHAUSTED"),
        { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "1s" }
      ] as StatusBody["error"]["details"]
    }
  }, { "retry-after": "1" })

// Refused before anything runs, as on JSON-RPC: UnsupportedOperation, that a client may send again elsewhere or later.
const shuttingDown = () =>
  statusAnswer(edgeBody(new UnsupportedOperationError(internalHttp.shuttingDown), 503, "UNAVAILABLE"), {
    "retry-after": "1"
  })

// No A2A reason says it: the ErrorInfo's is the status's own, in our domain, as a shed request's.
const unauthenticated = (refused: internalAuthentication.Refused) =>
  refused._tag === "Broken"
    ? statusAnswer(edgeBody(new A2AError(refused.message), 500, "INTERNAL"), internalHttp.closingHeader)
    : statusAnswer({
      error: {
        code: 401,
        status: "UNAUTHENTICATED",
        message: refused.message,
        details: [ownErrorInfo("UNAUTHENTICATED")] as StatusBody["error"]["details"]
      }
    }, { "www-authenticate": refused.challenge, ...internalHttp.closingHeader })

// JSON-RPC's MethodNotFound, which no A2A reason says.
const unknownRoute = (method: string, path: string) =>
  statusAnswer(
    tableBody(ErrorTable.rows.MethodNotFound, `No HTTP+JSON operation at ${method} ${path}.`, [
      ownErrorInfo("NOT_FOUND")
    ])
  )

const isJsonType = (contentType: string | undefined): boolean => {
  const mediaType = contentType?.split(";", 1)[0]?.trim().toLowerCase()
  return mediaType === jsonContentType || mediaType === A2A_CONTENT_TYPE
}

/** @internal */
export interface Options {
  /** The base path, with a leading slash and none trailing. */
  readonly path: string
  readonly card: AgentCard
  /** The request handler with its stages, as every transport calls it. */
  readonly handler: RequestHandler
  readonly subscriptions: internalSubscription.Subscriptions
  readonly maxBodyBytes: number
  readonly state: internalHttp.State
  readonly readBody: internalHttp.BodyReader
  readonly load: internalLoad.Load | undefined
  readonly gate?: internalAuthentication.Gate | undefined
}

const responseHeaders = (context: ServerCallContext): Record<string, string> =>
  context.activatedExtensions ? { [HTTP_EXTENSION_HEADER]: Array.from(context.activatedExtensions).join(",") } : {}

/**
 * An HTTP+JSON request, whatever server carries it.
 *
 * @internal
 */
export interface Incoming {
  readonly method: string
  /** What it asks below the base path, its query included (as the platform hands a mounted app its URL). */
  readonly url: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly remoteAddress: string
  /** Reads its body: its bytes, or `undefined` when over `maxBytes` (what is left is drained) or broken off. */
  readonly read: (maxBytes: number) => Promise<Uint8Array | undefined>
  /** Destroys its connection; undefined where the server's connection cannot be reached. */
  readonly destroy: (() => void) | undefined
}

/**
 * Whether a request's path (its query left out) is the base's or below it,
 * as the platform chooses a mounted app.
 *
 * @internal
 */
export const isBelow = (base: string, path: string): boolean => path === base || path.startsWith(`${base}/`)

/**
 * A request's URL below the base, as the platform hands it to a mounted app.
 *
 * @internal
 */
export const urlBelow = (base: string, url: string): string => url.length <= base.length ? "/" : url.slice(base.length)

/**
 * What an HTTP+JSON request comes to: a JSON answer (a refusal among them),
 * a call's failure, or a stream opened with its first event in.
 *
 * @internal
 */
export type Received =
  | {
    readonly _tag: "Json"
    readonly status: number
    readonly body?: unknown
    readonly headers: Record<string, string>
  }
  | { readonly _tag: "Failed"; readonly error: unknown; readonly headers: Record<string, string> }
  | { readonly _tag: "Stream"; readonly open: internalSse.OpenStream; readonly headers: Record<string, string> }

/**
 * Starts the route's call on a fiber of `runtime` of its own, interruptible
 * as the handler's stages need theirs to be, and watched from the start: a
 * client gone before its answer does not stop the call (a run it started
 * goes on, as on the other transports), and what the request holds is let
 * go once the call settles, or, for a stream, once it is closed. A stream is
 * settled once its first event came (a refusal comes as that event).
 * Whatever the route throws or fails with, or dies of, is its `Failed`
 * outcome.
 */
const called = (
  options: Options,
  route: Route,
  call: Call,
  runtime: Runtime.Runtime<never>,
  release: () => void
): Promise<Received> =>
  new Promise((resolve) => {
    const headers = responseHeaders(call.context)
    let iterator: AsyncIterator<unknown> | undefined
    // Lets go of what the request holds: its place in the bound, and a stream's place on its task's bus.
    const close = () => {
      void iterator?.return?.(undefined)?.catch(() => undefined)
      options.subscriptions.close(call.context)
      release()
    }
    const failed = (error: unknown) => {
      close()
      resolve({ _tag: "Failed", error, headers })
    }
    const fiber = Runtime.runFork(runtime)(Effect.suspend(() => {
      validateVersion(call.context.requestedVersion, options.card, "HTTP+JSON")
      return route.handle(options.handler, call, options.card)
    }))
    fiber.addObserver((exit) => {
      if (Exit.isFailure(exit)) {
        return failed(Cause.isInterruptedOnly(exit.cause) ? exit.cause : Cause.squash(exit.cause))
      }
      const answer = exit.value
      if (answer._tag === "Json") {
        close()
        return resolve({ ...answer, headers })
      }
      try {
        const opened = Stream.toAsyncIterableRuntime(answer.events, runtime)[Symbol.asyncIterator]()
        iterator = opened
        opened.next().then((first) =>
          resolve({
            _tag: "Stream",
            open: { first, iterator: opened, close, dropped: options.subscriptions.dropped(call.context), release },
            headers
          }), failed)
      } catch (error) {
        failed(error)
      }
    })
  })

// What the WHATWG URL parser leaves as it is: no percent-encoding, dot segment, query or fragment, and no `//` first.
const plainPath = /^\/(?!\/)[\w:/-]*$/

/** The context of a request's call, once it has one. */
interface Calling {
  context?: ServerCallContext
}

/**
 * Checks, reads and admits a request, then calls its route (`called`): one
 * promise per request, the call's fiber the only one it starts.
 */
const receive = async (
  options: Options,
  incoming: Incoming,
  runtime: Runtime.Runtime<never>,
  calling: Calling
): Promise<Received> => {
  if (options.state.closing) return shuttingDown()
  const { headers, method, remoteAddress } = incoming
  let user: User | undefined = undefined
  if (options.gate !== undefined) {
    const checked = await options.gate({ headers, method, transport: "HTTP+JSON", remoteAddress })
    if (!internalAuthentication.isUser(checked)) return unauthenticated(checked)
    user = checked
  }
  const contentType = headers["content-type"]
  // Before the route, as the SDK's guard: a body of another type is not read as empty.
  if (contentType !== undefined && !isJsonType(contentType)) {
    return statusAnswer(a2aErrorBody(
      new ContentTypeNotSupportedError(
        `Unsupported Content-Type "${contentType}"; expected application/json or application/a2a+json.`
      )
    ))
  }
  // Mounted at the base: the request's URL is what is below it. A path of plain characters and no query, as
  // clients send, is its own pathname: no URL is parsed for it.
  const url = plainPath.test(incoming.url) ? undefined : new URL(incoming.url, "http://localhost")
  const path = url === undefined ? incoming.url : url.pathname
  let matched: Matched | undefined
  try {
    matched = match(method, path)
  } catch {
    return malformed("The request's path is not valid percent-encoding.")
  }
  if (matched === undefined) return unknownRoute(method, `${options.path}${path}`)
  const declared = Number(headers["content-length"])
  if (Number.isFinite(declared) && declared > options.maxBodyBytes) {
    // Answered at once; the reader, keeping none of it, drains the rest so that the answer is not reset.
    void incoming.read(0)
    return tooLarge("Request body too large.")
  }
  // As the SDK's parser: a body is read only when it says it is JSON; an empty one is `{}`.
  let body: unknown = undefined
  if (contentType !== undefined) {
    const bytes = await incoming.read(options.maxBodyBytes)
    if (bytes === undefined) return tooLarge("Request body too large or unreadable.")
    body = bytes.byteLength === 0 ? {} : internalHttp.parseJson(bytes)
    if (body === internalHttp.notJson) return malformed("Invalid JSON payload.")
    if (internalNesting.deeperThan(body, internalNesting.maxNesting)) return malformed(internalNesting.tooDeep)
  }
  const { route, tenant } = matched
  let query: Query = url === undefined ? {} : Object.fromEntries(url.searchParams)
  // The path's tenant wins over the body's and the query's, as in the SDK's tenant middleware.
  if (tenant !== undefined) {
    query = { ...query, tenant }
    if (typeof body === "object" && body !== null && !Array.isArray(body)) body = { ...body, tenant }
  }
  const requestedVersion = headers[versionHeader] || undefined
  const context = defaultServerCallContextBuilder({
    extensions: Extensions.parseServiceParameter(headers[extensionHeader]),
    user: user ?? new UnauthenticatedUser(),
    headers: { ...headers },
    ...(requestedVersion === undefined ? {} : { requestedVersion }),
    ...(tenant === undefined ? {} : { tenant })
  })
  const call: Call = { taskId: matched.taskId, configId: matched.configId, query, body, context }
  calling.context = context
  // Admitted and called in one step, with nothing in between that could leave the place taken and not watched.
  if (route.runs !== true || options.load === undefined) return called(options, route, call, runtime, () => {})
  const messageId = (body as { readonly message?: { readonly messageId?: unknown } } | undefined)?.message
    ?.messageId
  const admitted = options.load.admitRun(
    typeof messageId === "string" ? messageId : undefined,
    internalAuthentication.loadKey(user, remoteAddress)
  )
  return admitted === "shed" ? shed() : called(options, route, call, runtime, admitted)
}

// A JSON body in the JSON type the request accepts (`accept.ts`), its length declared: one write with the headers.
const jsonAnswer = (
  status: number,
  body: unknown,
  headers: Record<string, string>,
  type: internalAccept.JsonType
): HttpServerResponse.HttpServerResponse => {
  if (body === undefined) return HttpServerResponse.empty({ status, headers })
  const text = JSON.stringify(body)
  return HttpServerResponse.raw(text, {
    status,
    contentType: type,
    contentLength: Buffer.byteLength(text),
    headers: { ...headers, vary: "Accept" }
  })
}

const answer = (
  received: Received,
  type: internalAccept.JsonType,
  destroy: (() => void) | undefined
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  switch (received._tag) {
    case "Json":
      return Effect.succeed(jsonAnswer(received.status, received.body, received.headers, type))
    case "Failed":
      return Effect.map(
        errorBody(received.error, "response"),
        (body) => jsonAnswer(body.error.code, body, received.headers, type)
      )
    case "Stream":
      return Effect.succeed(HttpServerResponse.stream(
        internalSse.sseStream(
          { ...received.open, destroy },
          (event) =>
            Effect.try({
              try: () =>
                EventId.sseEvent(
                  StreamResponse.toJSON(event as StreamResponse),
                  EventId.sequenceOf(event as StreamResponse)
                ),
              catch: (error) => error
            }),
          (error) => Effect.map(errorBody(error, "stream"), formatSSEErrorEvent)
        ),
        { contentType: SSE_HEADERS["Content-Type"], headers: { ...SSE_HEADERS, ...received.headers } }
      ))
  }
}

/**
 * An HTTP+JSON request taken, whatever server carries it: its call runs on
 * `runtime`.
 *
 * @internal
 */
export const exchange = (
  options: Options,
  incoming: Incoming,
  runtime: Runtime.Runtime<never>
): internalHttp.Exchange<Received> => new RestExchange(options, incoming, runtime)

// Its state in fields, not closures: an exchange is held for as long as its request is in flight.
class RestExchange implements internalHttp.Exchange<Received>, Calling {
  readonly received: Promise<Received>
  context?: ServerCallContext
  private readonly type: internalAccept.JsonType

  constructor(private readonly options: Options, private readonly incoming: Incoming, runtime: Runtime.Runtime<never>) {
    this.type = internalAccept.jsonType(incoming.headers.accept)
    this.received = receive(options, incoming, runtime, this)
  }

  answer(received: Received): Effect.Effect<HttpServerResponse.HttpServerResponse> {
    return answer(received, this.type, this.incoming.destroy)
  }

  abandon(): void {
    // A subscription still waiting for its first event (resumed after a paused task's last event, it waits for
    // the task's next run) lets go at once: it would not settle before then.
    if (this.context !== undefined) this.options.subscriptions.close(this.context)
    this.received.then((received) => {
      if (received._tag === "Stream") received.open.close()
    }, () => undefined)
  }
}

/**
 * The answer to whatever went wrong outside a call (its cause logged under
 * the error id it carries), in the JSON type `accept` asks for.
 *
 * @internal
 */
export const unexpected = (
  cause: Cause.Cause<unknown>,
  accept: string | undefined
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.map(
    errorBody(cause, "route"),
    (body) => jsonAnswer(body.error.code, body, {}, internalAccept.jsonType(accept))
  )

/**
 * The HTTP+JSON routes under `options.path`, added to `router`. Each call
 * runs on the runtime of its request's fiber, under the platform's span.
 *
 * @internal
 */
export const routesOn = (router: HttpRouter.HttpRouter, options: Options): HttpRouter.HttpRouter => {
  const route = Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request) =>
      Effect.flatMap(Effect.runtime<never>(), (runtime) =>
        internalHttp.exchanged(
          () =>
            exchange(options, {
              method: request.method,
              url: request.url,
              headers: request.headers,
              remoteAddress: Option.getOrElse(request.remoteAddress, () => ""),
              read: (maxBytes) => options.readBody(request, maxBytes),
              destroy: internalSse.destroyer(request)
            }, runtime),
          (cause) => unexpected(cause, request.headers.accept)
        ))
  )
  // Mounted, not routed: a mount is chosen by the path as sent, where the router's own match decodes it first
  // and answers an empty 404 to a path that does not decode. The base itself and whatever is asked below it
  // are answered with a Status. Interruptible, as the router makes its routes: a client gone ends its request.
  return HttpRouter.mountApp(router, options.path as `/${string}`, Effect.interruptible(route))
}
