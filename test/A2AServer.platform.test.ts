/**
 * The JSON-RPC tests of `A2AServer.test.ts` and `A2AServer.load.test.ts`
 * and the HTTP+JSON tests of `A2AServer.rest.test.ts` again, on the
 * platform's routes: with `httpSpans` on, `A2AServer.make` leaves JSON-RPC
 * and HTTP+JSON to the platform's router (and its span per request); off,
 * as it is by default there, the Node server answers them first
 * (`nodeListener.ts`). Both must answer alike.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Scope, Tracer } from "effect"
import { vi } from "vitest"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import { post, rpc } from "./fixtures/serverAgents.js"

const made = vi.hoisted(() => ({ onPlatform: 0 }))

vi.mock("../src/A2AServer.js", async (importOriginal) => {
  const original = await importOriginal<typeof A2AServer>()
  const make: typeof original.make = (options) => {
    if (options.httpSpans === undefined) made.onPlatform++
    return original.make({ httpSpans: true, ...options })
  }
  return { ...original, make }
})

await import("./A2AServer.test.js")
await import("./A2AServer.load.test.js")
await import("./A2AServer.rest.test.js")

describe("JSON-RPC on the platform's route", () => {
  it("the suites above ran on it", () => {
    expect(made.onPlatform).toBeGreaterThan(25)
  })

  // A tracer that notes the names of the spans it starts, and starts them as the default one does.
  const recording = (names: Array<string>) =>
    Effect.map(Effect.tracer, (native) =>
      Tracer.make({
        span: (name, ...rest) => {
          names.push(name)
          return native.span(name, ...rest)
        },
        context: native.context
      }))

  for (const httpSpans of [true, false]) {
    it.scopedLive(`with httpSpans ${httpSpans ? "on, a request has the platform's span" : "off, it has none"}; the answer is the same`, () =>
      Effect.gen(function*() {
        const names: Array<string> = []
        const tracer = yield* recording(names)
        const server = yield* A2AServer.make({
          agent: () => Effect.succeed(AgentExecutor.completedText("done")),
          card: { name: "spans", description: "one span per request, or none" },
          httpSpans
        }).pipe(Scope.extend(yield* Effect.scope), Effect.provide(Layer.setTracer(tracer)))
        const answer = yield* rpc(server.rpcUrl, "GetTask", { id: "no-such-task" })
        expect(answer.status).toBe(200)
        expect(JSON.parse(answer.text).error.code).toBe(-32001)
        expect(names.includes("http.server POST")).toBe(httpSpans)
      }))
  }

  it.scopedLive("what reaches the JSON-RPC path in another shape is answered alike on both paths", () =>
    Effect.gen(function*() {
      const agent = () => Effect.succeed(AgentExecutor.completedText("done"))
      const card = { name: "shapes", description: "the same answers on both paths" }
      const [own, platform] = yield* Effect.all([
        A2AServer.make({ agent, card, httpSpans: false }),
        A2AServer.make({ agent, card, httpSpans: true })
      ])
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "no-such-task" } })
      const answers = (rpcUrl: string) =>
        Effect.all([
          post(`${rpcUrl}?query=1`, body, { "A2A-Version": "1.0" }),
          post(`${rpcUrl}/`, body, { "A2A-Version": "1.0" }),
          post(rpcUrl, body, { "A2A-Version": "1.0", "content-type": "text/plain" }),
          Effect.promise(async () => {
            const response = await fetch(rpcUrl)
            return { status: response.status, text: await response.text(), headers: response.headers }
          })
        ])
      const shapes = (
        all: ReadonlyArray<{ readonly status: number; readonly text: string; readonly headers: Headers }>
      ) => all.map(({ headers, status, text }) => ({ status, text, type: headers.get("content-type") }))
      const ownAnswers = shapes(yield* answers(own.rpcUrl))
      expect(ownAnswers).toEqual(shapes(yield* answers(platform.rpcUrl)))
      // The query is no part of the path: answered as JSON-RPC.
      expect(JSON.parse(ownAnswers[0]!.text).error.code).toBe(-32001)
      expect(ownAnswers[2]!.status).toBe(200)
      expect(JSON.parse(ownAnswers[2]!.text).error.code).toBe(-32005)
    }))
})

const answered = (url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      vary: response.headers.get("vary"),
      text: (await response.text()).replace(/error_id=[0-9a-f]+/g, "error_id=…")
    }
  })

describe("HTTP+JSON on the platform's routes", () => {
  it.scopedLive("what reaches the HTTP+JSON routes in another shape is answered alike on both paths", () =>
    Effect.gen(function*() {
      const agent = () => Effect.succeed(AgentExecutor.completedText("done"))
      const card = { name: "shapes", description: "the same answers on both paths" }
      const [own, platform] = yield* Effect.all([
        A2AServer.make({ agent, card, httpSpans: false, transports: ["HTTP+JSON"] }),
        A2AServer.make({ agent, card, httpSpans: true, transports: ["HTTP+JSON"] })
      ])
      const v1 = { "a2a-version": "1.0" }
      const answers = (restUrl: string) =>
        Effect.all([
          answered(`${restUrl}/tasks/no-such-task?historyLength=1`, { headers: v1 }),
          answered(`${restUrl}/tenant-a/tasks/no-such-task`, { headers: { ...v1, accept: "application/a2a+json" } }),
          answered(restUrl, { headers: v1 }),
          answered(`${restUrl}?q=1`, { method: "POST", headers: v1 }),
          answered(`${restUrl}/tasks/%E0%A4%A`, { headers: v1 }),
          answered(`${restUrl}/message:send`, {
            method: "POST",
            headers: { ...v1, "content-type": "text/plain" },
            body: "{}"
          }),
          answered(`${restUrl}/message:send`, {
            method: "POST",
            headers: { ...v1, "content-type": "application/json" },
            body: "{not json"
          }),
          answered(`${restUrl}/message:send`, {
            method: "POST",
            headers: { ...v1, "content-type": "application/json" },
            body: JSON.stringify({ message: { role: "ROLE_USER", parts: [{ text: "hi" }] } })
          }),
          answered(`${restUrl}/tasks`, { headers: { "a2a-version": "9.9" } }),
          answered(`${restUrl}x/tasks`, { headers: v1 })
        ])
      const ownAnswers = yield* answers(own.urls["HTTP+JSON"]!)
      expect(ownAnswers).toEqual(yield* answers(platform.urls["HTTP+JSON"]!))
      expect(ownAnswers.map((answer) => answer.status)).toEqual([404, 404, 404, 404, 400, 400, 400, 400, 400, 404])
      // What is not below the base is not the routes': the platform's 404.
      expect(ownAnswers[9]!.text).toBe("")
      expect(ownAnswers[1]!.type).toBe("application/a2a+json")
      expect(ownAnswers[0]!.vary).toBe("Accept")
    }))
})
