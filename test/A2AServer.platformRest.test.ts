/**
 * The HTTP+JSON tests of `A2AServer.rest.test.ts` again, on the platform's
 * route: with `httpSpans` on, `A2AServer.make` leaves HTTP+JSON to the
 * platform's router (and its span per request); off, as it is by default
 * there, the Node server answers it first (`nodeListener.ts`). Both must
 * answer alike.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { vi } from "vitest"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"

const made = vi.hoisted(() => ({ onPlatform: 0 }))

vi.mock("../src/A2AServer.js", async (importOriginal) => {
  const original = await importOriginal<typeof A2AServer>()
  const make: typeof original.make = (options) => {
    if (options.httpSpans === undefined) made.onPlatform++
    return original.make({ httpSpans: true, ...options })
  }
  return { ...original, make }
})

await import("./A2AServer.rest.test.js")

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

describe("HTTP+JSON on the platform's route", () => {
  it("the suite above ran on it", () => {
    expect(made.onPlatform).toBeGreaterThan(5)
  })

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
