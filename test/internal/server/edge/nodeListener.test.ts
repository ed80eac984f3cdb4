import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type * as internalHttp from "../../../../src/internal/server/edge/http.js"
import * as internalNodeListener from "../../../../src/internal/server/edge/nodeListener.js"
import type * as internalRpc from "../../../../src/internal/server/transport/rpc.js"

/**
 * A Node server whose only request listener is the JSON-RPC one at `/rpc`, calling `dispatch`, in front of a
 * `next` that notes what it gets.
 */
const serving = (dispatch: internalRpc.Dispatcher["dispatch"], closing = false) =>
  Effect.gen(function*() {
    const endpoint: internalHttp.RpcEndpoint = {
      path: "/rpc",
      maxBodyBytes: 1024,
      state: { closing },
      load: undefined,
      dispatcher: { dispatch }
    }
    const passed: Array<string> = []
    const runtime = yield* Effect.runtime<never>()
    const server = Http.createServer(
      internalNodeListener.listener([internalNodeListener.rpcRoute(endpoint)], runtime, (request, response) => {
        passed.push(`${request.method} ${request.url}`)
        response.writeHead(404).end()
      })
    )
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.sync(() => server.closeAllConnections()).pipe(Effect.zipRight(Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
        })))
    )
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, passed }
  })

/** A stream whose first event answers `result`, then nothing: only its reader's leaving ends it. */
const endlessStream = (result: unknown, onClose: () => void): internalRpc.Dispatched => ({
  _tag: "Stream",
  first: { done: false, value: { jsonrpc: "2.0", id: 1, result } },
  iterator: { next: () => new Promise(() => {}) },
  close: onClose,
  mapError: () => ({ code: -32603, message: "unexpected" }),
  id: 1,
  headers: {}
})

/** A JSON-RPC request body, as the dispatch is handed it. */
const request = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "M" })

const post = (url: string, body: string, signal?: AbortSignal) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "a2a-version": "1.0" },
    body,
    signal: signal ?? null
  })

describe("server/nodeListener.listener, JSON-RPC", () => {
  it.scopedLive("answers POST on its path only; anything else goes on to the next listener", () =>
    Effect.gen(function*() {
      let dispatched = 0
      const { passed, url } = yield* serving((body) => {
        dispatched++
        return Promise.resolve({
          _tag: "Json",
          status: 200,
          body: { jsonrpc: "2.0", id: 1, result: body },
          headers: {}
        })
      })
      const answered = yield* Effect.promise(() => post(`${url}/rpc?x=1`, request).then((response) => response.json()))
      expect(answered).toEqual({ jsonrpc: "2.0", id: 1, result: JSON.parse(request) })
      const others = yield* Effect.promise(() =>
        Promise.all(
          [fetch(`${url}/rpc`), post(`${url}/rpc/`, "{}"), post(`${url}/other`, "{}")].map((answer) =>
            answer.then((response) => response.status)
          )
        )
      )
      expect(others).toEqual([404, 404, 404])
      expect(passed).toEqual(["GET /rpc", "POST /rpc/", "POST /other"])
      expect(dispatched).toBe(1)
    }))

  it.scopedLive("a closing server refuses with 503, Retry-After and -32004 before anything runs", () =>
    Effect.gen(function*() {
      let dispatched = 0
      const { url } = yield* serving(() => {
        dispatched++
        return Promise.reject(new Error("nothing may run while the server shuts down"))
      }, true)
      const refused = yield* Effect.promise(() => post(`${url}/rpc`, "{}"))
      expect(refused.status).toBe(503)
      expect(refused.headers.get("retry-after")).toBe("1")
      expect((yield* Effect.promise(() => refused.json())).error.code).toBe(-32004)
      expect(dispatched).toBe(0)
    }))

  it.scopedLive("a client gone before its stream's first event still closes the stream", () =>
    Effect.gen(function*() {
      let closed = 0
      let started: () => void = () => {}
      const dispatching = new Promise<void>((resolve) => {
        started = resolve
      })
      // The stream's first event comes late: the client has left by then.
      const { url } = yield* serving(() => {
        started()
        return new Promise((resolve) => setTimeout(() => resolve(endlessStream({}, () => closed++)), 200))
      })
      const abort = new AbortController()
      const answer = post(`${url}/rpc`, request, abort.signal).catch((error: unknown) => error)
      yield* Effect.promise(() => dispatching)
      abort.abort()
      yield* Effect.promise(() => answer)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 400)))
      expect(closed).toBe(1)
    }))

  it.scopedLive("a client that leaves a stream it reads stops it: the stream is closed, its writer interrupted", () =>
    Effect.gen(function*() {
      let closed = 0
      const { url } = yield* serving(() => Promise.resolve(endlessStream({ n: 1 }, () => closed++)))
      const abort = new AbortController()
      const first = yield* Effect.promise(async () => {
        const response = await post(`${url}/rpc`, request, abort.signal)
        const reader = response.body!.getReader()
        const chunk = await reader.read()
        return { type: response.headers.get("content-type"), text: new TextDecoder().decode(chunk.value) }
      })
      expect(first.type).toBe("text/event-stream")
      expect(first.text).toContain("\"n\":1")
      expect(closed).toBe(0)
      abort.abort()
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
      expect(closed).toBe(1)
    }))
})
