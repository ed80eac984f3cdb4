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
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
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
import { type Answer, type Call, match, type Matched, type Query, type Route } from "./restRoutes.js"

/** The default base path of the HTTP+JSON routes. @internal */
export const defaultPath = "/a2a/rest"

const jsonContentType = "application/json"
const versionHeader = A2A_VERSION_HEADER.toLowerCase()
const extensionHeader = HTTP_EXTENSION_HEADER.toLowerCase()

/** A `google.rpc.Status` body, as the SDK writes it. */
type StatusBody = RestErrorBody

// Every JSON answer, errors included, is made as `application/a2a+json` (the SDK's restHandler sends them so),
// and goes out in the type the request accepts (`negotiated`).
const a2aJson = (body: unknown, status: number, headers: Record<string, string>) =>
  HttpServerResponse.raw(JSON.stringify(body), { status, contentType: A2A_CONTENT_TYPE, headers })

const statusResponse = (body: StatusBody, headers: Record<string, string> = {}) =>
  a2aJson(body, body.error.code, headers)

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

const malformed = (message: string) => statusResponse(a2aErrorBody(new RequestMalformedError(message)))

// The body reader drains what is left (see `drainBytes`): the connection stays open for it.
const tooLarge = (message: string) =>
  statusResponse(edgeBody(new RequestMalformedError(message), 413, "INVALID_ARGUMENT"))

// The ErrorInfo of an error no A2A reason says: the status's own, in our domain, so that no client reads it as an A2A error.
const ownErrorInfo = (reason: string) => ({ "@type": ERROR_INFO_TYPE, reason, domain: "effect-a2a" })

// Over the bound: 429 and when to come back, as on JSON-RPC. No A2A reason says it, so the ErrorInfo's is
// the status's own, in our domain (no client reads it as an A2A error); RetryInfo says what Retry-After says.
const shed = () =>
  statusResponse({
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
  statusResponse(edgeBody(new UnsupportedOperationError(internalHttp.shuttingDown), 503, "UNAVAILABLE"), {
    "retry-after": "1"
  })

// No A2A reason says it: the ErrorInfo's is the status's own, in our domain, as a shed request's.
const unauthenticated = (refused: internalAuthentication.Refused) =>
  internalHttp.closingConnection(
    refused._tag === "Broken"
      ? statusResponse(edgeBody(new A2AError(refused.message), 500, "INTERNAL"))
      : statusResponse({
        error: {
          code: 401,
          status: "UNAUTHENTICATED",
          message: refused.message,
          details: [ownErrorInfo("UNAUTHENTICATED")] as StatusBody["error"]["details"]
        }
      }, { "www-authenticate": refused.challenge })
  )

// JSON-RPC's MethodNotFound, which no A2A reason says.
const unknownRoute = (method: string, path: string) =>
  statusResponse(
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

type Settled =
  | { readonly _tag: "Failed"; readonly error: unknown }
  | Extract<Answer, { _tag: "Json" }>
  | { readonly _tag: "Stream"; readonly first: IteratorResult<unknown> }

/**
 * Calls the route; a stream is settled once its first event came (a refusal
 * comes as that event). Whatever the route throws or fails with, or dies
 * of, is its `Failed` outcome.
 */
const settle = (
  options: Options,
  route: Route,
  call: Call,
  opened: (iterator: AsyncIterator<unknown>) => void
): Effect.Effect<Settled> =>
  Effect.suspend(() => {
    validateVersion(call.context.requestedVersion, options.card, "HTTP+JSON")
    return route.handle(options.handler, call, options.card)
  }).pipe(
    Effect.flatMap((answer: Answer): Effect.Effect<Settled> => {
      if (answer._tag === "Json") return Effect.succeed(answer)
      return Effect.flatMap(Effect.runtime<never>(), (runtime) => {
        const iterator = Stream.toAsyncIterableRuntime(answer.events, runtime)[Symbol.asyncIterator]()
        opened(iterator)
        return Effect.map(Effect.promise(() => iterator.next()), (first): Settled => ({ _tag: "Stream", first }))
      })
    }),
    Effect.catchAllCause((cause) =>
      Effect.succeed<Settled>({ _tag: "Failed", error: Cause.isInterruptedOnly(cause) ? cause : Cause.squash(cause) })
    )
  )

const serve = (options: Options, request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    if (options.state.closing) return shuttingDown()
    const headers: Readonly<Record<string, string | undefined>> = request.headers
    const remoteAddress = Option.getOrElse(request.remoteAddress, () => "")
    let user: User | undefined = undefined
    if (options.gate !== undefined) {
      const gate = options.gate
      const checked = yield* Effect.promise(() =>
        gate({ headers, method: request.method, transport: "HTTP+JSON", remoteAddress })
      )
      if (!internalAuthentication.isUser(checked)) return unauthenticated(checked)
      user = checked
    }
    const contentType = headers["content-type"]
    // Before the route, as the SDK's guard: a body of another type is not read as empty.
    if (contentType !== undefined && !isJsonType(contentType)) {
      return statusResponse(a2aErrorBody(
        new ContentTypeNotSupportedError(
          `Unsupported Content-Type "${contentType}"; expected application/json or application/a2a+json.`
        )
      ))
    }
    // Mounted at the base: the request's URL is what is below it.
    const url = new URL(request.url, "http://localhost")
    const path = url.pathname
    let matched: Matched | undefined
    try {
      matched = match(request.method, path)
    } catch {
      return malformed("The request's path is not valid percent-encoding.")
    }
    if (matched === undefined) return unknownRoute(request.method, `${options.path}${path}`)
    const declared = Number(headers["content-length"])
    if (Number.isFinite(declared) && declared > options.maxBodyBytes) {
      // Answered at once; the reader, keeping none of it, drains the rest so that the answer is not reset.
      void options.readBody(request, 0)
      return tooLarge("Request body too large.")
    }
    // As the SDK's parser: a body is read only when it says it is JSON; an empty one is `{}`.
    let body: unknown = undefined
    if (contentType !== undefined) {
      const bytes = yield* Effect.promise(() => options.readBody(request, options.maxBodyBytes))
      if (bytes === undefined) return tooLarge("Request body too large or unreadable.")
      body = bytes.byteLength === 0 ? {} : internalHttp.parseJson(bytes)
      if (body === internalHttp.notJson) return malformed("Invalid JSON payload.")
      if (internalNesting.deeperThan(body, internalNesting.maxNesting)) return malformed(internalNesting.tooDeep)
    }
    const { route, tenant } = matched
    let query: Query = Object.fromEntries(url.searchParams)
    // The path's tenant wins over the body's and the query's, as in the SDK's tenant middleware.
    if (tenant !== undefined) {
      query = { ...query, tenant }
      if (typeof body === "object" && body !== null && !Array.isArray(body)) body = { ...body, tenant }
    }
    let release = () => {}
    if (route.runs === true && options.load !== undefined) {
      const messageId = (body as { readonly message?: { readonly messageId?: unknown } } | undefined)?.message
        ?.messageId
      const admitted = options.load.admitRun(
        typeof messageId === "string" ? messageId : undefined,
        internalAuthentication.loadKey(user, remoteAddress)
      )
      if (admitted === "shed") return shed()
      release = admitted
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
    let iterator: AsyncIterator<unknown> | undefined
    // Lets go of what the request holds: its place in the bound, and a stream's place on its task's bus.
    const close = () => {
      void iterator?.return?.(undefined)?.catch(() => undefined)
      options.subscriptions.close(context)
      release()
    }
    // A client gone before its answer does not stop the call (a run it started goes on, as on the other
    // transports): what the request holds is let go once the call settles. The call runs on a fiber of its
    // own, interruptible as the handler's stages need theirs to be, not in an uninterruptible region of the
    // request's fiber, whose forks would inherit it.
    // Forked and watched with no gap in between where the request's interruption would leave it unwatched.
    const outcome = yield* Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        Effect.forkDaemon(Effect.interruptible(settle(options, route, call, (opened) => {
          iterator = opened
        }))),
        (settling) =>
          Effect.onInterrupt(
            restore(Fiber.join(settling)),
            // A subscription still waiting for its first event (resumed after a paused task's last event, it
            // waits for the task's next run) lets go at once: it would not settle before then.
            () =>
              Effect.sync(() => options.subscriptions.close(context)).pipe(
                Effect.zipRight(Effect.forkDaemon(Effect.zipRight(Fiber.await(settling), Effect.sync(close))))
              )
          )
      )
    )
    const answerHeaders = responseHeaders(context)
    switch (outcome._tag) {
      case "Failed":
        close()
        return statusResponse(yield* errorBody(outcome.error, "response"), answerHeaders)
      case "Json":
        close()
        return outcome.body === undefined
          ? HttpServerResponse.empty({ status: outcome.status, headers: answerHeaders })
          : a2aJson(outcome.body, outcome.status, answerHeaders)
      case "Stream":
        return HttpServerResponse.stream(
          internalSse.sseStream(
            {
              first: outcome.first,
              // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- a Stream outcome comes only after opened() was given the iterator
              iterator: iterator!,
              close,
              dropped: options.subscriptions.dropped(context),
              release,
              destroy: internalSse.destroyer(request)
            },
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
          { contentType: SSE_HEADERS["Content-Type"], headers: { ...SSE_HEADERS, ...answerHeaders } }
        )
    }
  })

/** A JSON answer in the JSON type `accept` asks for; any other (an SSE stream, no body) as it is. */
const negotiated = (response: HttpServerResponse.HttpServerResponse, accept: string | undefined) => {
  const body = response.body
  if (body._tag !== "Raw" || body.contentType !== A2A_CONTENT_TYPE) return response
  return HttpServerResponse.setBody(
    HttpServerResponse.setHeader(response, "vary", "Accept"),
    HttpBody.raw(body.body, { contentType: internalAccept.jsonType(accept), contentLength: body.contentLength })
  )
}

/**
 * The HTTP+JSON routes under `options.path`, added to `router`.
 *
 * @internal
 */
export const routesOn = (router: HttpRouter.HttpRouter, options: Options): HttpRouter.HttpRouter => {
  const route = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    serve(options, request).pipe(
      Effect.catchAllCause((cause) => Effect.map(errorBody(cause, "route"), (body) => statusResponse(body))),
      Effect.map((response) => negotiated(response, request.headers.accept))
    ))
  // Mounted, not routed: a mount is chosen by the path as sent, where the router's own match decodes it first
  // and answers an empty 404 to a path that does not decode. The base itself and whatever is asked below it
  // are answered with a Status. Interruptible, as the router makes its routes: a client gone ends its request.
  return HttpRouter.mountApp(router, options.path as `/${string}`, Effect.interruptible(route))
}
