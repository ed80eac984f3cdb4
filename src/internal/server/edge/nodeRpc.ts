/**
 * The JSON-RPC endpoint answered by the Node server of `A2AServer.make`
 * itself, ahead of the platform's router: the same steps as the router's
 * route (`http.ts`), as plain promises on the Node request, without the
 * fiber the platform runs per request. A request in flight holds what
 * Express's does; an SSE answer still streams on a fiber of its own.
 * Every other request goes to the platform as before.
 *
 * @internal
 */
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Http from "node:http"
import type * as internalRpc from "../transport/rpc.js"
import * as internalHttp from "./http.js"
import { readBody } from "./nodeBody.js"

type Listener = (request: Http.IncomingMessage, response: Http.ServerResponse) => void

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
 * Answers `POST endpoint.path` and hands every other request to `next`.
 * `runtime` is the server's, whose loggers take what a -32603 answer logs.
 *
 * @internal
 */
export const listener = (
  endpoint: internalHttp.RpcEndpoint,
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
    if (request.method !== "POST" || pathOf(request.url) !== endpoint.path) return next(request, response)
    // Its values are strings but for `set-cookie`, which the dispatch does not read.
    const headers = request.headers as internalRpc.Headers
    let streaming: Fiber.RuntimeFiber<void, unknown> | undefined
    let gone = false
    const respond = (answer: HttpServerResponse.HttpServerResponse) => {
      if (gone) return
      // Only reached by a failure while the answer was being written: the connection cannot carry another.
      if (response.headersSent) return void response.destroy()
      streaming = write(response, answer)
    }
    const failed = (error: unknown) => respond(runSync(internalHttp.unexpected(Cause.die(error))))
    try {
      const refused = internalHttp.refusedUnread(endpoint, headers)
      if (refused !== undefined) return respond(refused)
      const received = internalHttp.receive(
        endpoint,
        () => readBody(request, endpoint.maxBodyBytes),
        headers,
        request.socket.remoteAddress ?? ""
      )
      response.on("close", () => {
        if (response.writableEnded) return
        gone = true
        if (streaming === undefined) internalHttp.abandon(endpoint, headers, received)
        else streaming.unsafeInterruptAsFork(FiberId.none)
      })
      received.then((received) => respond(runSync(internalHttp.answer(received, () => response.destroy())))).catch(
        failed
      )
    } catch (error) {
      failed(error)
    }
  }
}

/**
 * Puts {@link listener} in front of the request listeners `server` has (the
 * platform's), for the lifetime of the scope.
 *
 * @internal
 */
export const answerFirst = (
  server: Http.Server,
  endpoint: internalHttp.RpcEndpoint
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.flatMap(Effect.runtime<never>(), (runtime) => {
    const platform = server.listeners("request") as Array<Listener>
    const ours = listener(endpoint, runtime, (request, response) => {
      for (const next of platform) next.call(server, request, response)
    })
    for (const next of platform) server.off("request", next)
    server.on("request", ours)
    return Effect.addFinalizer(() => Effect.sync(() => server.off("request", ours)))
  })
