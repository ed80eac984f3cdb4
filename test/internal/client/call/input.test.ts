import { describe, expect, it } from "@effect/vitest"
import * as input from "../../../../src/internal/client/call/input.js"
import * as IdempotencyKey from "../../../../src/internal/wire/idempotencyKey.js"
import * as Part from "../../../../src/Part.js"
import { untyped } from "../../../fixtures/serverAgents.js"

describe("what a call sends", () => {
  it("carries the idempotency key in the message metadata, beside the caller's, without changing the caller's", () => {
    const metadata = { channel: "web" }
    const message = input.messageOf(
      { parts: [Part.TextPart.make({ text: "hi" })], contextId: "ctx-1", taskId: "t1", metadata },
      { idempotencyKey: "order-1" }
    )
    expect(message.metadata).toEqual({ channel: "web", [IdempotencyKey.metadataKey]: "order-1" })
    expect(metadata).toEqual({ channel: "web" })
    expect([message.contextId, message.taskId]).toEqual(["ctx-1", "t1"])
    expect(input.messageOf("hi", undefined).metadata).toBeUndefined()
    expect(input.messageOf("hi", { idempotencyKey: "k" }).metadata).toEqual({ [IdempotencyKey.metadataKey]: "k" })
  })

  it("reports the agent's own headers first, and checks a message only when there is one", () => {
    const check = input.unsendable({ "x-tenant": "a\nb" })
    expect(check({ headers: { "bad header": "x" } })).toMatch(
      /^the value of the agent's header x-tenant cannot be sent/
    )
    const fine = input.unsendable({ "x-tenant": "acme" })
    expect(fine(undefined)).toBeUndefined()
    expect(fine({ headers: { "bad header": "x" } })).toBe(`the call's header name "bad header" is not an HTTP token`)
    const notJson = { parts: [Part.DataPart.make({ data: untyped({ total: 10n }) })] }
    expect(fine(undefined, notJson)).toBe("the message is not JSON data at parts[0].data.total: a bigint")
    expect(fine({ idempotencyKey: "k " }, notJson)).toBe("the idempotency key starts or ends with a space or a tab")
  })

  it("names the task of a call never sent", () => {
    const error = input.invalidRequest("booking", "SendMessage", input.inputIds({ parts: [], taskId: "t1" }), "why")
    expect(error).toMatchObject({ reason: "InvalidRequest", delivery: "NotSent", taskId: "t1", detail: "why" })
    expect(error.contextId).toBeUndefined()
    expect(input.inputIds("hi")).toEqual({})
  })
})

describe("client/input.keyFor", () => {
  it("keeps a call's key, unless it retries a FAILED task: then one derived from the key and that task, the same every time", () => {
    const options = { idempotencyKey: "order-1", timeout: "1 second" as const }
    expect(input.keyFor(options, undefined)).toBe(options)
    expect(input.keyFor({ timeout: "1 second" }, "t-1")).toEqual({ timeout: "1 second" })
    const retried = input.keyFor(options, "t-1")
    expect(retried).toMatchObject({
      timeout: "1 second",
      idempotencyKey: expect.stringMatching(/^idem-v1-[0-9a-f]{64}$/)
    })
    expect(input.keyFor(options, "t-1")).toEqual(retried)
    expect(input.keyFor(options, "t-2")?.idempotencyKey).not.toBe(retried?.idempotencyKey)
    expect(input.keyFor({ idempotencyKey: "order-2" }, "t-1")?.idempotencyKey).not.toBe(retried?.idempotencyKey)
  })
})
