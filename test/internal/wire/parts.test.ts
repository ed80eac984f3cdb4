import { type Message, TaskState } from "@a2a-js/sdk"
import { type AgentExecutor, DefaultRequestHandler, InMemoryTaskStore, ServerCallContext } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Equal, Hash } from "effect"
import * as wireParts from "../../../src/internal/wire/parts.js"
import * as Part from "../../../src/Part.js"
import * as RemoteOutcome from "../../../src/RemoteOutcome.js"
import { userMessage } from "../../fixtures/serverAgents.js"

describe("the wire encoding", () => {
  it("writes a text part as the SDK's own server does", async () => {
    // The SDK's handler writes its own status text when it cancels a task no run holds.
    const store = new InMemoryTaskStore()
    const context = new ServerCallContext()
    await store.save({
      id: "t1",
      contextId: "c1",
      status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [],
      metadata: {}
    }, context)
    const idle: AgentExecutor = { execute: async () => undefined, cancelTask: async () => undefined }
    const card = {
      name: "peer",
      description: "",
      version: "1",
      supportedInterfaces: [],
      capabilities: {},
      defaultInputModes: [],
      defaultOutputModes: [],
      skills: []
    }
    const handler = new DefaultRequestHandler(card as never, store, idle)
    const canceled = await handler.cancelTask({ tenant: "", id: "t1", metadata: undefined }, context)
    const sdkPart = canceled.status!.message!.parts[0]!
    expect(sdkPart.content?.$case).toBe("text")
    expect(wireParts.textPart(String(sdkPart.content!.value))).toEqual(sdkPart)
    expect(wireParts.toWirePart(Part.TextPart.make({ text: "x" }))).toEqual(wireParts.textPart("x"))
  })

  it("reads back what it writes", () => {
    const parts = [
      Part.TextPart.make({ text: "hello" }),
      Part.DataPart.make({ data: { n: 1, list: [true, null] } }),
      Part.FilePart.make({ url: "https://example.com/a.pdf", mediaType: "application/pdf", filename: "a.pdf" }),
      Part.FilePart.make({ bytes: new Uint8Array([1, 2, 3]), mediaType: "application/octet-stream", filename: "b.bin" })
    ]
    const artifact = Part.Artifact.make({ artifactId: "a", name: "n", description: "d", parts })
    expect(wireParts.fromWireArtifact(wireParts.toWireArtifact(artifact))).toEqual(artifact)
  })
})

describe("conversion builds the instances make builds", () => {
  // The client builds outcomes without their constructors (see `build`); this
  // guards that shortcut against changes in how Schema classes are made.
  const sameAsMake = (value: { readonly constructor: unknown }) => {
    const Class = value.constructor as new(props: object, options?: boolean) => object
    const { _tag, ...props } = value as unknown as Record<string, unknown>
    const made = new Class(props, true)
    const built = wireParts.build(Class, props)
    expect(Object.getPrototypeOf(built)).toBe(Object.getPrototypeOf(made))
    expect(Object.entries(built)).toEqual(Object.entries(made))
    // As equal as a second `make` is: never, for a value that equals nothing (NaN in a data part).
    expect(Equal.equals(built, made)).toBe(Equal.equals(new Class(props, true), made))
    expect(Hash.hash(built)).toBe(Hash.hash(made))
    expect(String(built)).toBe(String(made))
  }
  it.prop("outcomes", [RemoteOutcome.RemoteOutcome], ([outcome]) => sameAsMake(outcome))
  it.prop("running tasks", [RemoteOutcome.Running], ([running]) => sameAsMake(running))
  it.prop("parts and artifacts", [Part.Part, Part.Artifact], ([part, artifact]) => {
    sameAsMake(part)
    sameAsMake(artifact)
  })
  it("a data part holding NaN", () => {
    sameAsMake(Part.DataPart.make({ data: NaN }))
    sameAsMake(Part.DataPart.make({ data: { n: 1 } }))
    // Data classes compare a plain object by reference, as two `make`s of it do.
    const data = { n: 1 }
    expect(Equal.equals(wireParts.build(Part.DataPart, { data }), Part.DataPart.make({ data }))).toBe(true)
    expect(Equal.equals(wireParts.build(Part.DataPart, { data: { n: 1 } }), Part.DataPart.make({ data: { n: 2 } })))
      .toBe(false)
  })
})

describe("the caller's message", () => {
  it("reads no metadata or references as empty, not absent", () => {
    const message = { ...userMessage("hi"), metadata: undefined, referenceTaskIds: undefined } as unknown as Message
    expect(wireParts.fromUserMessage(message)).toEqual({
      messageId: message.messageId,
      parts: [Part.TextPart.make({ text: "hi" })],
      metadata: {},
      referenceTaskIds: []
    })
  })
})
