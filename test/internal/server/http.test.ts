import type { AgentCard } from "@a2a-js/sdk"
import type * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as Http from "node:http"
import { PassThrough, Readable } from "node:stream"
import * as internalHttp from "../../../src/internal/server/http.js"
import type * as internalRpc from "../../../src/internal/server/rpc.js"
import * as RemoteAgent from "../../../src/RemoteAgent.js"

describe("server/http.readBody", () => {
  it("gives the whole body, in one buffer, however it arrives", async () => {
    const body = await internalHttp.readBody(Readable.from([Buffer.from("{\"a\":"), Buffer.from("1}")]), 1024)
    expect(body?.toString("utf8")).toBe("{\"a\":1}")
  })

  it("gives undefined for a body over the limit, counted as it arrives, and drains the rest", async () => {
    const incoming = new PassThrough()
    const body = internalHttp.readBody(incoming, 4)
    incoming.write(Buffer.from("abc"))
    incoming.write(Buffer.from("de"))
    expect(await body).toBeUndefined()
    incoming.end(Buffer.from("more"))
    await new Promise((resolve) => incoming.once("end", resolve))
  })

  it("gives undefined for a body that breaks off", async () => {
    const incoming = new PassThrough()
    const body = internalHttp.readBody(incoming, 1024)
    incoming.write(Buffer.from("{\"a\""))
    incoming.destroy()
    expect(await body).toBeUndefined()
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
        supportedInterfaces: ["1.0", "0.3"].map((protocolVersion) => ({ url: `${url}/rpc`, protocolBinding: "JSONRPC", tenant: "", protocolVersion }))
      } as unknown as AgentCard
      let dispatched = 0
      const dispatcher: internalRpc.Dispatcher = {
        dispatch: () => {
          dispatched++
          return Promise.reject(new Error("nothing may run while the server shuts down"))
        }
      }
      const router = yield* internalHttp.router({ card, cardMaxAge: 0, rpcPath: "/rpc", maxBodyBytes: 1024, dispatcher, state: { closing: true } })
      yield* server.serve(router)
      const raw = yield* Effect.promise(() =>
        fetch(`${url}/rpc`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
      )
      expect(raw.status).toBe(503)
      expect(raw.headers.get("retry-after")).toBe("1")
      expect((yield* Effect.promise(() => raw.json())).error).toMatchObject({ code: -32004, message: "The server is shutting down." })
      const agent = yield* RemoteAgent.make({ name: "closing", url, card })
      const error = yield* Effect.flip(agent.send("book"))
      expect(error).toMatchObject({ reason: "ProtocolError", code: -32004, status: 503, delivery: "Refused" })
      expect(error.retryAfter && Duration.toMillis(error.retryAfter)).toBe(1000)
      expect(dispatched).toBe(0)
    }))
})
