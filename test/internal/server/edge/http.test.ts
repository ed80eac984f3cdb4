import type { AgentCard } from "@a2a-js/sdk"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as Http from "node:http"
import * as internalHttp from "../../../../src/internal/server/edge/http.js"
import type * as internalRpc from "../../../../src/internal/server/transport/rpc.js"
import * as RemoteAgent from "../../../../src/RemoteAgent.js"

describe("server/http.platformBodyReader", () => {
  // A request of the web platform, its body given chunk by chunk: what a router mounted on any server reads.
  const requestOf = (chunks: ReadonlyArray<string>, options: { readonly breakOff?: boolean } = {}) => {
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled < chunks.length) controller.enqueue(new TextEncoder().encode(chunks[pulled++]!))
        else if (options.breakOff) controller.error(new Error("connection reset"))
        else controller.close()
      }
    })
    const request = HttpServerRequest.fromWeb(
      new Request("http://127.0.0.1/rpc", { method: "POST", body, duplex: "half" } as RequestInit)
    )
    return { request, pulled: () => pulled }
  }

  it("gives the whole body, however it arrives", async () => {
    const { request } = requestOf(["{\"a\":", "1", "}"])
    const body = await internalHttp.platformBodyReader(request, 1024)
    expect(new TextDecoder().decode(body)).toBe("{\"a\":1}")
  })

  it("gives undefined once over the limit, without waiting for the rest, which is drained", async () => {
    const { pulled, request } = requestOf(["abc", "de", "more", "and more"])
    expect(await internalHttp.platformBodyReader(request, 4)).toBeUndefined()
    await expect.poll(pulled, { timeout: 2000 }).toBe(4)
  })

  it("lets go of a refused body that goes on past the drain bound, rather than drain it all", async () => {
    let pulled = 0
    let canceled = false
    const piece = new Uint8Array(1024 * 1024)
    const body = new ReadableStream<Uint8Array>({
      // Bounded, so that a reader that drains it all ends.
      pull(controller) {
        if (pulled >= 64 * 1024 * 1024) return controller.close()
        pulled += piece.length
        controller.enqueue(piece)
      },
      cancel() {
        canceled = true
      }
    })
    const request = HttpServerRequest.fromWeb(
      new Request("http://127.0.0.1/rpc", { method: "POST", body, duplex: "half" } as RequestInit)
    )
    expect(await internalHttp.platformBodyReader(request, 4)).toBeUndefined()
    await expect.poll(() => canceled, { timeout: 5000 }).toBe(true)
    expect(pulled).toBeLessThanOrEqual(internalHttp.drainBytes + 4 * piece.length)
  })

  it("gives undefined for a body that breaks off", async () => {
    const { request } = requestOf(["{\"a\""], { breakOff: true })
    expect(await internalHttp.platformBodyReader(request, 1024)).toBeUndefined()
  })
})

describe("server/http.isLegacyVersion", () => {
  it("asks for v0.3 when absent, empty, or in [0.3, 1.0)", () => {
    expect(internalHttp.isLegacyVersion(undefined)).toBe(true)
    expect(internalHttp.isLegacyVersion(" ")).toBe(true)
    expect(internalHttp.isLegacyVersion("0.3")).toBe(true)
    expect(internalHttp.isLegacyVersion("0.9")).toBe(true)
    expect(internalHttp.isLegacyVersion("0.2")).toBe(false)
    expect(internalHttp.isLegacyVersion("1.0")).toBe(false)
    expect(internalHttp.isLegacyVersion("x")).toBe(false)
  })
})

describe("server/http.router while the server shuts down", () => {
  it.scopedLive("refuses a JSON-RPC request before anything runs: 503, Retry-After, -32004, which a client reads as Refused", () =>
    Effect.gen(function*() {
      const server = yield* NodeHttpServer.make(() => Http.createServer(), { host: "127.0.0.1", port: 0 })
      const address = server.address as HttpServer.TcpAddress
      const url = `http://127.0.0.1:${address.port}`
      const card = {
        name: "closing",
        description: "a server that shuts down",
        version: "1.0.0",
        capabilities: { streaming: true },
        defaultInputModes: ["text/plain"],
        defaultOutputModes: ["text/plain"],
        skills: [],
        supportedInterfaces: ["1.0", "0.3"].map((protocolVersion) => ({
          url: `${url}/rpc`,
          protocolBinding: "JSONRPC",
          tenant: "",
          protocolVersion
        }))
      } as unknown as AgentCard
      let dispatched = 0
      const dispatcher: internalRpc.Dispatcher = {
        dispatch: () => {
          dispatched++
          return Promise.reject(new Error("nothing may run while the server shuts down"))
        }
      }
      const router = yield* internalHttp.router({
        card,
        cardMaxAge: 0,
        rpc: { path: "/rpc", maxBodyBytes: 1024, dispatcher, state: { closing: true }, load: undefined },
        state: { closing: true }
      })
      yield* server.serve(router)
      const raw = yield* Effect.promise(() =>
        fetch(`${url}/rpc`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
      )
      expect(raw.status).toBe(503)
      expect(raw.headers.get("retry-after")).toBe("1")
      expect((yield* Effect.promise(() => raw.json())).error).toEqual({
        code: -32004,
        message: "The server is shutting down.",
        data: [{
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "UNSUPPORTED_OPERATION",
          domain: "a2a-protocol.org"
        }]
      })
      const agent = yield* RemoteAgent.make({ name: "closing", url, card })
      const error = yield* Effect.flip(agent.send("book"))
      expect(error).toMatchObject({ reason: "ProtocolError", code: -32004, status: 503, delivery: "Refused" })
      expect(error.retryAfter && Duration.toMillis(error.retryAfter)).toBe(1000)
      expect(dispatched).toBe(0)
    }))
})
