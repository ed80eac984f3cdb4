import { describe, expect, it } from "@effect/vitest"
import { PassThrough, Readable } from "node:stream"
import * as nodeBody from "../../../src/internal/server/nodeBody.js"

describe("server/nodeBody.readBody", () => {
  it("gives the whole body, in one buffer, however it arrives", async () => {
    const body = await nodeBody.readBody(Readable.from([Buffer.from("{\"a\":"), Buffer.from("1}")]), 1024)
    expect(body?.toString("utf8")).toBe("{\"a\":1}")
  })

  it("gives undefined for a body over the limit, counted as it arrives, and drains the rest", async () => {
    const incoming = new PassThrough()
    const body = nodeBody.readBody(incoming, 4)
    incoming.write(Buffer.from("abc"))
    incoming.write(Buffer.from("de"))
    expect(await body).toBeUndefined()
    incoming.end(Buffer.from("more"))
    await new Promise((resolve) => incoming.once("end", resolve))
  })

  it("gives undefined for a body that breaks off", async () => {
    const incoming = new PassThrough()
    const body = nodeBody.readBody(incoming, 1024)
    incoming.write(Buffer.from("{\"a\""))
    incoming.destroy()
    expect(await body).toBeUndefined()
  })
})
