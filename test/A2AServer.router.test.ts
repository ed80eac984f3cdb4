import { type Task, TaskState } from "@a2a-js/sdk"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Config, ConfigProvider, Context, Effect, Exit, Layer, Option, Scope, Stream } from "effect"
import * as Http from "node:http"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Part from "../src/Part.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { restClient } from "./fixtures/restPeer.js"
import { makeClient, post, send, textOf, userMessage } from "./fixtures/serverAgents.js"

const card = { name: "mounted", description: "A2AServer.makeRouter tests" }

const echo: AgentExecutor.Agent = (request) =>
  Effect.succeed(AgentExecutor.completedText(`echo ${Part.textOf(request.message.parts)}`))

/** The application's own Node server on port 0, and its base URL. */
const appServer = Effect.gen(function*() {
  const server = yield* NodeHttpServer.make(() => Http.createServer(), { host: "127.0.0.1", port: 0 })
  return { server, url: `http://127.0.0.1:${(server.address as HttpServer.TcpAddress).port}` }
})

describe("A2AServer.makeRouter", () => {
  it.scopedLive("serves the agent beside the application's own route and middleware, on the application's port", () =>
    Effect.gen(function*() {
      const { server, url } = yield* appServer
      const a2a = yield* A2AServer.makeRouter({ agent: echo, card, publicUrl: url, maxBodyBytes: 4096 })
      let seenByMiddleware = 0
      const app = HttpRouter.empty.pipe(
        HttpRouter.get("/healthz", HttpServerResponse.text("ok")),
        HttpRouter.concat(a2a.router),
        HttpRouter.use((handler) => Effect.zipRight(Effect.sync(() => seenByMiddleware++), handler))
      )
      yield* server.serve(app)

      const health = yield* Effect.promise(() => fetch(`${url}/healthz`).then((r) => r.text()))
      expect(health).toBe("ok")
      expect(a2a.rpcUrl).toBe(`${url}/a2a/jsonrpc`)

      // A peer we did not write, from the card the router serves.
      const client = yield* makeClient(url)
      const task = yield* send(client, "from the SDK")
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textOf(task)).toBe("echo from the SDK")

      const agent = yield* RemoteAgent.make({ name: "mounted", url })
      const outcome = yield* agent.send("from RemoteAgent")
      expect(outcome).toMatchObject({ _tag: "Completed", text: "echo from RemoteAgent" })
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(agent.stream("streamed")))
      expect(events.at(-1)).toMatchObject({ _tag: "Finished", outcome: { _tag: "Completed", text: "echo streamed" } })

      // The platform's body reader: a body over the limit is refused with 413, still answered.
      const tooLarge = yield* post(a2a.rpcUrl, JSON.stringify({ pad: "x".repeat(5000) }), { "A2A-Version": "1.0" })
      expect(tooLarge.status).toBe(413)
      expect(JSON.parse(tooLarge.text).error.code).toBe(-32602)
      expect(seenByMiddleware).toBeGreaterThanOrEqual(5)
    }))

  it.scopedLive("mounted under a prefix, the card and the endpoint are below it", () =>
    Effect.gen(function*() {
      const { server, url } = yield* appServer
      const base = `${url}/agents/echo`
      const a2a = yield* A2AServer.makeRouter({ agent: echo, card, publicUrl: `${base}/` })
      expect(a2a.url).toBe(base)
      yield* server.serve(HttpRouter.empty.pipe(HttpRouter.mount("/agents/echo", a2a.router)))
      const agent = yield* RemoteAgent.make({ name: "prefixed", url: base })
      expect(Option.getOrThrow(agent.card).supportedInterfaces[0]?.url).toBe(`${base}/a2a/jsonrpc`)
      const outcome = yield* agent.send("below")
      expect(outcome).toMatchObject({ _tag: "Completed", text: "echo below" })
      // HTTP+JSON below the same prefix, through the SDK's REST client.
      expect(a2a.urls["HTTP+JSON"]).toBe(`${base}/a2a/rest`)
      const rest = yield* restClient(`${base}/`)
      const task = (yield* Effect.promise(() =>
        rest.sendMessage({ tenant: "", message: userMessage("over rest"), configuration: undefined, metadata: {} })
      )) as Task
      expect(textOf(task)).toBe("echo over rest")
    }))

  it.scopedLive("closing its scope refuses new requests as Refused and ends running tasks, while the application serves on", () =>
    Effect.gen(function*() {
      const { server, url } = yield* appServer
      const scope = yield* Scope.make()
      const a2a = yield* A2AServer.makeRouter({ agent: echo, card, publicUrl: url }).pipe(Scope.extend(scope))
      yield* server.serve(HttpRouter.empty.pipe(
        HttpRouter.get("/healthz", HttpServerResponse.text("ok")),
        HttpRouter.concat(a2a.router)
      ))
      const agent = yield* RemoteAgent.make({ name: "closing", url })
      yield* Scope.close(scope, Exit.void)
      const error = yield* Effect.flip(agent.send("too late"))
      expect(error).toMatchObject({ reason: "ProtocolError", code: -32004, status: 503, delivery: "Refused" })
      expect(yield* Effect.promise(() => fetch(`${url}/healthz`).then((r) => r.text()))).toBe("ok")
    }))
})

describe("A2AServer.layerConfig", () => {
  it.scopedLive("reads its options through Config, and a bad value fails the layer with a ConfigError", () =>
    Effect.gen(function*() {
      const layer = A2AServer.layerConfig({
        agent: Config.succeed(echo),
        card: { name: Config.string("AGENT_NAME"), description: Config.succeed("configured") },
        port: Config.port("PORT").pipe(Config.withDefault(0)),
        rpcPath: Config.string("RPC_PATH")
      })
      const configured = (entries: ReadonlyArray<readonly [string, string]>) =>
        Layer.setConfigProvider(ConfigProvider.fromMap(new Map(entries)))
      const built = yield* Layer.build(
        Layer.provide(layer, configured([["AGENT_NAME", "from-config"], ["RPC_PATH", "/rpc"]]))
      )
      const server = Context.get(built, A2AServer.A2AServer)
      expect(server.card.name).toBe("from-config")
      expect(server.rpcUrl).toBe(`${server.url}/rpc`)
      const agent = yield* RemoteAgent.make({ name: "configured", url: server.url })
      expect((yield* agent.send("hi"))._tag).toBe("Completed")

      const missing = yield* Effect.flip(Layer.build(Layer.provide(layer, configured([["AGENT_NAME", "x"]]))))
      expect(missing._tag).toBe("ConfigError")
      const badPort = yield* Effect.flip(
        Layer.build(Layer.provide(layer, configured([["AGENT_NAME", "x"], ["RPC_PATH", "/rpc"], ["PORT", "http"]])))
      )
      expect(badPort._tag).toBe("ConfigError")
    }))
})
