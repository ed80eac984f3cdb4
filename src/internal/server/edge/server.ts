/**
 * The A2A server on a Node HTTP server it starts: the routes of `app.ts` on
 * the bound address, with the Node body reader, for the lifetime of the
 * current scope.
 *
 * @internal
 */
import type * as NodeHttpServerModule from "@effect/platform-node/NodeHttpServer"
import * as Headers from "@effect/platform/Headers"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"
import type * as Net from "node:net"
import type * as A2AServer from "../../../A2AServer.js"
import type * as IdempotencyLedger from "../../../IdempotencyLedger.js"
import { bracketed, hostForUrl, ListenError } from "../../listen.js"
import * as internalTracing from "../../observability/tracing.js"
import * as internalAuthentication from "../caller/authentication.js"
import * as internalGrpc from "../transport/grpc.js"
import * as internalApp from "./app.js"

// Loaded when a server is started, not with the module: an application that only mounts the routes in a
// server of its own never loads `@effect/platform-node`.
const nodePieces = Effect.promise(() =>
  Promise.all([import("@effect/platform-node/NodeHttpServer"), import("./nodeBody.js"), import("./nodeListener.js")])
)

/**
 * Holds the connections `nodeServer` accepts, unread, until `serve`, which
 * hands them to Node's HTTP server: the port is bound before the routes are
 * built, as the card names it, and a request that reached a server with no
 * route yet would never be answered. `drop` ends those still held.
 */
const holdingConnections = (nodeServer: Http.Server) => {
  const accept = nodeServer.listeners("connection") as Array<(socket: Net.Socket) => void>
  const held = new Set<Net.Socket>()
  const hold = (socket: Net.Socket) => held.add(socket)
  const pausing = nodeServer as Http.Server & { pauseOnConnect: boolean }
  pausing.pauseOnConnect = true
  nodeServer.removeAllListeners("connection")
  nodeServer.on("connection", hold)
  const serve = () => {
    pausing.pauseOnConnect = false
    nodeServer.off("connection", hold)
    for (const listener of accept) nodeServer.on("connection", listener)
    for (const socket of held) {
      for (const listener of accept) listener.call(nodeServer, socket)
      socket.resume()
    }
    held.clear()
  }
  return { serve, drop: Effect.sync(() => held.forEach((socket) => socket.destroy())) }
}

// Binds the Node server; its base URL is the public one when given, otherwise the bound address.
const listen = (
  options: Pick<A2AServer.Options<unknown, unknown>, "host" | "port" | "publicUrl">,
  NodeHttpServer: typeof NodeHttpServerModule
) =>
  Effect.gen(function*() {
    const nodeServer = Http.createServer()
    const { drop, serve } = holdingConnections(nodeServer)
    const host = options.host ?? "127.0.0.1"
    const port = options.port ?? 0
    const httpServer = yield* NodeHttpServer.make(() => nodeServer, { host, port }).pipe(
      Effect.mapError((error) => new ListenError(error.cause, `${bracketed(host)}:${port}`))
    )
    // Before the server's own close, which waits for every connection: a start that fails lets go of those held.
    yield* Effect.addFinalizer(() => drop)
    const address = httpServer.address._tag === "TcpAddress"
      ? { hostname: httpServer.address.hostname, port: httpServer.address.port }
      : { hostname: "localhost", port: 0 }
    const url = (options.publicUrl ?? `http://${hostForUrl(address.hostname)}:${address.port}`).replace(/\/+$/, "")
    return { nodeServer, httpServer, address, url, serve }
  })

const close = (nodeServer: Http.Server, shutdown: Effect.Effect<void>) =>
  Effect.gen(function*() {
    // The port stays open while the runs in flight end: a new request is answered 503 with Retry-After, which a
    // load balancer or a client reads as "elsewhere, or later", where a refused connection looks like a crash.
    yield* shutdown
    // Then it stops accepting; the connections close as they go idle.
    let closed = false
    nodeServer.close(() => {
      closed = true
    })
    // Let the answers to the runs that just ended go out: a connection is idle once its answer is.
    yield* Effect.sync(() => nodeServer.closeIdleConnections()).pipe(
      Effect.zipRight(Effect.sleep("10 millis")),
      Effect.repeat({ until: () => closed, times: 200 })
    )
    nodeServer.closeAllConnections()
  })

/** @internal */
export const make = <E, R>(
  options: A2AServer.Options<E, R>
): Effect.Effect<
  Context.Tag.Service<A2AServer.A2AServer>,
  A2AServer.MakeError,
  R | IdempotencyLedger.IdempotencyLedger | Scope.Scope
> =>
  Effect.gen(function*() {
    const [NodeHttpServer, { nodeBodyReader }, nodeListener] = yield* nodePieces
    const { address, httpServer, nodeServer, serve, url } = yield* listen(options, NodeHttpServer)
    const grpc = yield* internalGrpc.listenFor(options, options.maxBodyBytes ?? internalApp.defaultMaxBodyBytes, true)
    const { rest, router, rpc, shutdown, ...app } = yield* internalApp.make(options, url, nodeBodyReader, grpc)
    // The platform builds a span per request (URL parsing, every header as an
    // attribute); with no tracer of the application's it goes nowhere.
    const tracer = yield* Effect.tracer
    const httpSpans = options.httpSpans ?? internalTracing.exportsSpans(tracer)
    // A span's header attributes hide every header that carries credentials, the authenticator's own included.
    yield* (httpSpans
      ? httpServer.serve(router)
      : HttpMiddleware.withTracerDisabledWhenEffect(httpServer.serve(router), () => true)).pipe(
        Effect.locallyWith(Headers.currentRedactedNames, (names) => [
          ...names,
          ...internalAuthentication.credentialHeadersOf(options.authenticate)
        ])
      )
    // Without the platform's span, JSON-RPC and HTTP+JSON need nothing of its fiber per request, which costs a
    // request in flight about as much as Express holds for it whole: the Node server answers them first. HTTP+JSON
    // is tried first, as the platform tries its mount before its routes.
    if (!httpSpans && (rpc !== undefined || rest !== undefined)) {
      yield* nodeListener.answerFirst(nodeServer, (runtime) => [
        ...(rest === undefined ? [] : [nodeListener.restRoute(rest, runtime)]),
        ...(rpc === undefined ? [] : [nodeListener.rpcRoute(rpc)])
      ])
    }
    // Every route and transport answers now.
    serve()

    // Added last, so it runs first when the scope closes.
    yield* Effect.addFinalizer(() => close(nodeServer, shutdown))

    return { url, address, ...app }
  })
