/**
 * The JSON-RPC tests of `A2AServer.test.ts` and `A2AServer.load.test.ts`
 * again, on the platform's route: with `httpSpans` on, `A2AServer.make`
 * leaves JSON-RPC to the platform's router (and its span per request);
 * off, as it is by default there, the Node server answers it first
 * (`nodeRpc.ts`). Both must answer alike.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Scope, Tracer } from "effect"
import { vi } from "vitest"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import { rpc } from "./fixtures/serverAgents.js"

const made = vi.hoisted(() => ({ onPlatform: 0 }))

vi.mock("../src/A2AServer.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../src/A2AServer.js")>()
  const make: typeof original.make = (options) => {
    if (options.httpSpans === undefined) made.onPlatform++
    return original.make({ httpSpans: true, ...options })
  }
  return { ...original, make }
})

await import("./A2AServer.test.js")
await import("./A2AServer.load.test.js")

describe("JSON-RPC on the platform's route", () => {
  it("the suites above ran on it", () => {
    expect(made.onPlatform).toBeGreaterThan(20)
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
})
