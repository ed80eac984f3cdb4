import { describe, expect, it } from "@effect/vitest"
import { PassThrough, Readable } from "node:stream"
import * as internalHttp from "../../../../src/internal/server/edge/http.js"
import * as nodeBody from "../../../../src/internal/server/edge/nodeBody.js"

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

  it("drains a refused body within the bound to its end: it is not cut off", async () => {
    const incoming = new PassThrough()
    const body = nodeBody.readBody(incoming, 4)
    incoming.write(Buffer.from("abcde"))
    expect(await body).toBeUndefined()
    incoming.end(Buffer.alloc(1024 * 1024))
    const ended = await new Promise((resolve) => {
      incoming.once("end", () => resolve("end"))
      incoming.once("close", () => resolve("closed before its end"))
    })
    expect(ended).toBe("end")
  })

  it("destroys a refused body that goes on past the drain bound", async () => {
    const incoming = new PassThrough()
    const body = nodeBody.readBody(incoming, 4)
    incoming.write(Buffer.from("abcde"))
    expect(await body).toBeUndefined()
    const piece = Buffer.alloc(1024 * 1024)
    for (let sent = 0; sent <= internalHttp.drainBytes && !incoming.destroyed; sent += piece.length) {
      incoming.write(piece)
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect(incoming.destroyed).toBe(true)
  })

  it("destroys a drained body that has not ended within its time", async () => {
    const incoming = new PassThrough()
    nodeBody.drain(incoming, 1024, 50)
    incoming.write(Buffer.from("still coming"))
    expect(incoming.destroyed).toBe(false)
    await new Promise((resolve) => setTimeout(resolve, 150))
    expect(incoming.destroyed).toBe(true)
  })
})
