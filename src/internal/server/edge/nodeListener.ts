/**
 * The JSON-RPC endpoint and the HTTP+JSON routes answered by the Node
 * server of `A2AServer.make` itself, ahead of the platform's router: the
 * same exchanges as the router's routes (`http.ts`, `transport/rest.ts`),
 * as plain promises on the Node request, without the fiber the platform
 * runs per request. A request in flight holds what Express's does; an SSE
 * answer still streams on a fiber of its own. Every other request goes to
 * the platform as before.
 *
 * @internal
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Http from "node:http"
import type { Exchange, Started } from "../http/body.js"
import * as internalRest from "../transport/rest.js"
import type * as internalRpc from "../transport/rpc.js"
import * as internalHttp from "./http.js"
import { readBody } from "./nodeBody.js"

type Listener = (request: Http.IncomingMessage, response: Http.ServerResponse) => void

/**
 * What the Node server answers itself: the requests it takes (by method and
 * path, the query left out), what it makes of one, and the answer to
 * whatever goes wrong outside that.
 *
 * @internal
 */
export interface NodeRoute {
  readonly takes: (method: string, path: string) => boolean
  readonly start: (request: Http.IncomingMessage, destroy: () => void) => Started<unknown>
  readonly unexpected: (
    cause: Cause.Cause<unknown>,
    request: Http.IncomingMessage
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}

/** The JSON-RPC endpoint, at `POST endpoint.path`. @internal */
export const rpcRoute = (endpoint: internalHttp.RpcEndpoint): NodeRoute => ({
  takes: (method, path) => method === "POST" && path === endpoint.path,
  start: (request, destroy) =>
    internalHttp.exchange(
      endpoint,
      // Its values are strings but for `set-cookie`, which the dispatch does not read.
      request.headers as internalRpc.Headers,
      () => readBody(request, endpoint.maxBodyBytes),
      request.socket.remoteAddress ?? "",
      destroy
    ),
  unexpected: internalHttp.unexpected
})

/**
 * The HTTP+JSON routes, at `options.path` and below; each call runs on
 * `runtime`, the server's.
 *
 * @internal
 */
export const restRoute = (options: internalRest.Options, runtime: Runtime.Runtime<never>): NodeRoute => ({
  takes: (_, path) => internalRest.isBelow(options.path, path),
  start: (request, destroy) =>
    internalRest.exchange(options, {
      method: request.method ?? "",
      url: internalRest.urlBelow(options.path, request.url ?? ""),
      // Its values are strings but for `set-cookie`, which no route reads.
      headers: request.headers as Readonly<Record<string, string | undefined>>,
      remoteAddress: request.socket.remoteAddress ?? "",
      read: (maxBytes) => readBody(request, maxBytes),
      destroy
    }, runtime),
  unexpected: (cause, request) => internalRest.unexpected(cause, request.headers.accept)
})

const pathOf = (url: string | undefined): string => {
  if (url === undefined) return ""
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

// Each chunk written as it comes; a full socket buffer holds the next until it drains.
const written = (response: Http.ServerResponse, chunk: Uint8Array): Effect.Effect<void> =>
  response.write(chunk) ? Effect.void : Effect.async<void>((resume) => {
    const drained = () => resume(Effect.void)
    response.once("drain", drained)
    return Effect.sync(() => response.off("drain", drained))
  })

/**
 * Answers what `routes` take (the first that takes a request answers it)
 * and hands every other request to `next`. `runtime` is the server's, whose
 * loggers take what an unexpected failure logs, and on which SSE answers
 * stream.
 *
 * @internal
 */
export const listener = (
  routes: ReadonlyArray<NodeRoute>,
  runtime: Runtime.Runtime<never>,
  next: Listener
): Listener => {
  const runSync = Runtime.runSync(runtime)
  const runFork = Runtime.runFork(runtime)
  // As the platform writes these bodies: the status and headers, then the body; an SSE stream chunk by chunk.
  const write = (response: Http.ServerResponse, answer: HttpServerResponse.HttpServerResponse) => {
    const body = answer.body
    response.writeHead(answer.status, answer.headers)
    if (body._tag !== "Stream") {
      response.end(body._tag === "Raw" || body._tag === "Uint8Array" ? body.body as string | Uint8Array : undefined)
      return undefined
    }
    const fiber = runFork(Stream.runForEach(body.stream, (chunk) => written(response, chunk)))
    // Ended however the stream ends, as the platform ends it (whose SSE streams end failures with an event).
    fiber.addObserver(() => response.end())
    return fiber
  }
  return (request, response) => {
    const method = request.method ?? ""
    const path = pathOf(request.url)
    const route = routes.find((route) => route.takes(method, path))
    if (route === undefined) return next(request, response)
    const taken = new Taken(response, write)
    const failed = (error: unknown) => taken.respond(runSync(route.unexpected(Cause.die(error), request)))
    try {
      const started = route.start(request, () => response.destroy())
      if (HttpServerResponse.isServerResponse(started)) return taken.respond(started)
      response.on("close", () => taken.closed(started))
      started.received.then((received) => taken.respond(runSync(started.answer(received)))).catch(failed)
    } catch (error) {
      failed(error)
    }
  }
}

// A request taken, as it is answered: its state in fields, not closures, as it is held while in flight.
class Taken {
  private streaming: Fiber.RuntimeFiber<void, unknown> | undefined
  private gone = false

  constructor(
    private readonly response: Http.ServerResponse,
    private readonly write: (
      response: Http.ServerResponse,
      answer: HttpServerResponse.HttpServerResponse
    ) => Fiber.RuntimeFiber<void, unknown> | undefined
  ) {}

  respond(answer: HttpServerResponse.HttpServerResponse): void {
    if (this.gone) return
    // Only reached by a failure while the answer was being written: the connection cannot carry another.
    if (this.response.headersSent) return void this.response.destroy()
    this.streaming = this.write(this.response, answer)
  }

  closed(started: Exchange<unknown>): void {
    if (this.response.writableEnded) return
    this.gone = true
    if (this.streaming === undefined) started.abandon()
    else this.streaming.unsafeInterruptAsFork(FiberId.none)
  }
}

/**
 * Puts {@link listener} for `routes` in front of the request listeners
 * `server` has (the platform's), for the lifetime of the scope.
 *
 * @internal
 */
export const answerFirst = (
  server: Http.Server,
  routes: (runtime: Runtime.Runtime<never>) => ReadonlyArray<NodeRoute>
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.flatMap(Effect.runtime<never>(), (runtime) => {
    const platform = server.listeners("request") as Array<Listener>
    const ours = listener(routes(runtime), runtime, (request, response) => {
      for (const next of platform) next.call(server, request, response)
    })
    for (const next of platform) server.off("request", next)
    server.on("request", ours)
    return Effect.addFinalizer(() => Effect.sync(() => server.off("request", ours)))
  })
