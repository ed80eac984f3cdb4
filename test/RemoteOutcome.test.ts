import { describe, expect, it } from "@effect/vitest"
import { FastCheck, Option, Schema } from "effect"
import * as FailureHint from "../src/FailureHint.js"
import * as RemoteEvent from "../src/RemoteEvent.js"
import * as RemoteOutcome from "../src/RemoteOutcome.js"

const hex12 = FastCheck.stringMatching(/^[0-9a-f]{12}$/)
/** Text that cannot form or extend an error id. */
const noise = FastCheck.string().filter((s) => !s.includes("error_id"))
const noiseNotHex = noise.filter((s) => !/^[0-9a-fA-F]/.test(s))

describe("extractErrorId", () => {
  it.prop("a text with exactly one error id yields it", [noise, hex12, noiseNotHex], ([before, id, after]) => {
    expect(RemoteOutcome.extractErrorId(`${before}error_id: ${id}${after}`)).toEqual(Option.some(id))
  })

  it.prop("texts without an error id yield none", [noise], ([text]) => {
    expect(RemoteOutcome.extractErrorId(text)).toEqual(Option.none())
  })

  it.prop("two error ids are ambiguous: none", [noise, hex12, hex12, noiseNotHex], ([between, a, b, after]) => {
    expect(RemoteOutcome.extractErrorId(`error_id: ${a} ${between}error_id: ${b}${after}`))
      .toEqual(Option.none())
  })

  it("near misses yield none", () => {
    for (
      const text of [
        "error_id: 3F9C0A7B12DE",
        "error_id: 3f9c0a7b12d",
        "error_id: 3f9c0a7b12de0",
        "error_id:3f9c0a7b12de",
        "Agent execution failed."
      ]
    ) expect(RemoteOutcome.extractErrorId(text)).toEqual(Option.none())
    expect(RemoteOutcome.extractErrorId("Agent execution failed. (error_id: 3f9c0a7b12de)")).toEqual(
      Option.some("3f9c0a7b12de")
    )
  })
})

describe("round trips", () => {
  it.prop("every outcome survives Schema encode/decode", [RemoteOutcome.RemoteOutcome], ([outcome]) => {
    const encoded = Schema.encodeSync(RemoteOutcome.RemoteOutcome)(outcome)
    const decoded = Schema.decodeUnknownSync(RemoteOutcome.RemoteOutcome)(encoded)
    expect(decoded._tag).toBe(outcome._tag)
    expect(Schema.encodeSync(RemoteOutcome.RemoteOutcome)(decoded)).toEqual(encoded)
  })

  it.prop("every stream event survives Schema encode/decode", [RemoteEvent.RemoteEvent], ([event]) => {
    const encoded = Schema.encodeSync(RemoteEvent.RemoteEvent)(event)
    const decoded = Schema.decodeUnknownSync(RemoteEvent.RemoteEvent)(encoded)
    expect(Schema.encodeSync(RemoteEvent.RemoteEvent)(decoded)).toEqual(encoded)
  })

  it.prop("a running task survives Schema encode/decode", [RemoteOutcome.Running], ([running]) => {
    const encoded = Schema.encodeSync(RemoteOutcome.Running)(running)
    expect(Schema.decodeUnknownSync(RemoteOutcome.Running)(encoded)).toEqual(running)
  })
})

describe("$match", () => {
  it("dispatches on the tag", () => {
    const fields = { agent: "a", taskId: "t", contextId: "c", text: "why", parts: [], artifacts: [] }
    const describe = RemoteOutcome.$match({
      Completed: () => "ok",
      Failed: (o) => `failed ${Option.getOrElse(o.errorId, () => "-")}`,
      Canceled: () => "canceled",
      Rejected: (o) => `rejected ${o.text}`,
      InputRequired: (o) => `asks ${o.text}`,
      AuthRequired: () => "auth"
    })
    expect(describe(RemoteOutcome.Rejected.make(fields))).toBe("rejected why")
    expect(describe(RemoteOutcome.Failed.make({ ...fields, errorId: Option.some("abc"), hint: Option.none() }))).toBe(
      "failed abc"
    )
  })
})

describe("errorIdOf", () => {
  it("takes the id in the text, else the one in the failure hint; none for other outcomes", () => {
    const fields = { agent: "a", taskId: "t", contextId: "c", text: "Payment declined.", parts: [], artifacts: [] }
    const hint = Option.some(FailureHint.FailureHint.make({ errorId: "3f9c0a7b12de", retryable: true }))
    const inText = Option.some("0123456789ab")
    expect(RemoteOutcome.errorIdOf(RemoteOutcome.Failed.make({ ...fields, errorId: Option.none(), hint }))).toEqual(
      Option.some("3f9c0a7b12de")
    )
    expect(RemoteOutcome.errorIdOf(RemoteOutcome.Failed.make({ ...fields, errorId: inText, hint }))).toEqual(inText)
    expect(
      RemoteOutcome.errorIdOf(RemoteOutcome.Failed.make({ ...fields, errorId: Option.none(), hint: Option.none() }))
    )
      .toEqual(Option.none())
    expect(RemoteOutcome.errorIdOf(RemoteOutcome.Completed.make(fields))).toEqual(Option.none())
  })
})
