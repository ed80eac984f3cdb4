import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import { post } from "./fixtures/serverAgents.js"

const card = { name: "bad-input", description: "bad input" }

/** An agent that counts its runs. */
const counted = () => {
  const runs = { count: 0 }
  const agent: AgentExecutor.Agent = () =>
    Effect.sync(() => {
      runs.count++
      return AgentExecutor.completedText("done")
    })
  return { agent, runs }
}

const sendRequest = (extra: Record<string, unknown> = { id: 1 }) => ({
  jsonrpc: "2.0",
  ...extra,
  method: "SendMessage",
  params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "hi" }] } }
})

const v1 = { "A2A-Version": "1.0" }

describe("A2AServer JSON-RPC bad input", () => {
  it.scopedLive("a body that is not a request object is -32600 with our own text, parsed once and never run", () =>
    Effect.gen(function*() {
      const { agent, runs } = counted()
      const server = yield* A2AServer.make({ agent, card, maxInFlight: 4 })
      // A JSON string holding a request: the SDK's handler would parse it again and run it.
      const wrapped = JSON.stringify(JSON.stringify(sendRequest()))
      const answers = yield* Effect.all(
        Array.from({ length: 40 }, () => post(server.rpcUrl, wrapped, v1)),
        { concurrency: "unbounded" }
      )
      for (const answer of answers) {
        expect(answer.status).toBe(200)
        expect(JSON.parse(answer.text)).toMatchObject({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32600, message: "Invalid Request: the body must be a JSON-RPC request object." }
        })
      }
      // One nested past the nesting bound, inside a string: refused the same way, not a -32603.
      const deep = `${'{"inner":'.repeat(10_000)}"leaf"${"}".repeat(10_000)}`
      const nested = yield* post(server.rpcUrl, JSON.stringify(JSON.stringify(sendRequest()).replace(/}$/, `,"deep":${deep}}`)), v1)
      expect(JSON.parse(nested.text).error.code).toBe(-32600)
      // A string that is not JSON inside: JavaScript's parse message never reaches the wire.
      const bad = yield* post(server.rpcUrl, JSON.stringify("str"), v1)
      expect(JSON.parse(bad.text).error).toMatchObject({ code: -32600 })
      expect(bad.text).not.toMatch(/Unexpected token|not valid JSON/)
      for (const body of ["5", "null", "true", "[]", JSON.stringify([sendRequest()])]) {
        for (const headers of [v1, {}]) {
          const answer = JSON.parse((yield* post(server.rpcUrl, body, headers)).text)
          expect(answer.id).toBeNull()
          expect(answer.error.code).toBe(-32600)
          expect(answer.error.message).toBe(
            body.startsWith("[")
              ? "Batch requests are not supported."
              : "Invalid Request: the body must be a JSON-RPC request object."
          )
        }
      }
      expect(runs.count).toBe(0)
    }))

  it.scopedLive("a notification (no id) gets 204 and no body, and does not run; an invalid one is answered", () =>
    Effect.gen(function*() {
      const { agent, runs } = counted()
      const server = yield* A2AServer.make({ agent, card })
      for (const headers of [v1, {}]) {
        const notification = yield* post(server.rpcUrl, JSON.stringify(sendRequest({})), headers)
        expect(notification.status).toBe(204)
        expect(notification.text).toBe("")
      }
      const legacy = yield* post(server.rpcUrl, JSON.stringify({ jsonrpc: "2.0", method: "message/send", params: {} }))
      expect(legacy.status).toBe(204)
      // Not a valid request, so not a notification: JSON-RPC 2.0 answers it with an error under the id null.
      const invalid = JSON.parse((yield* post(server.rpcUrl, JSON.stringify({ jsonrpc: "2.0" }), v1)).text)
      expect(invalid).toMatchObject({ id: null, error: { code: -32600 } })
      // An explicit null id is a request, not a notification: it is run and answered.
      const nullId = yield* post(server.rpcUrl, JSON.stringify(sendRequest({ id: null })), v1)
      expect(JSON.parse(nullId.text)).toMatchObject({ id: null, result: { task: { status: { state: "TASK_STATE_COMPLETED" } } } })
      expect(runs.count).toBe(1)
    }))
})
