/**
 * The Node-only piece of the server: the body of a Node request read off its
 * `IncomingMessage`, without the copies and steps of the platform's stream.
 * `A2AServer.make` uses it on the server it starts; a router mounted in an
 * application's own server reads the platform's request (see `http.ts`).
 *
 * @internal
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type { Readable } from "node:stream"
import { drainBytes, drainMillis } from "./http.js"

/**
 * Reads what is left of a refused body and drops it, so that the refusal
 * reaches a client still sending; once past `bytes`, or after `millis`, the
 * request is destroyed instead, which closes its connection.
 *
 * @internal
 */
export const drain = (incoming: Readable, bytes = drainBytes, millis = drainMillis): void => {
  let left = bytes
  const done = () => {
    clearTimeout(timer)
    incoming.off("data", onData)
    incoming.off("end", done)
    incoming.off("close", done)
    incoming.off("error", done)
  }
  const stop = () => {
    done()
    incoming.destroy()
  }
  const timer = setTimeout(stop, millis)
  const onData = (chunk: Buffer) => {
    left -= chunk.length
    if (left < 0) stop()
  }
  incoming.on("data", onData)
  incoming.on("end", done)
  incoming.on("close", done)
  incoming.on("error", done)
  incoming.resume()
}

/**
 * The body of a Node request, or `undefined` when it is larger than
 * `maxBytes` (counted as it arrives, before anything is parsed) or breaks
 * off. What is left of a refused body is drained ({@link drain}).
 *
 * @internal
 */
export const readBody = (incoming: Readable, maxBytes: number): Promise<Buffer | undefined> =>
  new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const finish = (value: Buffer | undefined) => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("error", onError)
      incoming.off("close", onClose)
      resolve(value)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        finish(undefined)
        drain(incoming)
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => finish(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size))
    const onError = () => finish(undefined)
    const onClose = () => finish(undefined)
    incoming.on("data", onData)
    incoming.on("end", onEnd)
    incoming.on("error", onError)
    incoming.on("close", onClose)
  })

/** The body reader of a request served by `@effect/platform-node`. @internal */
export const nodeBodyReader = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) =>
  readBody(NodeHttpServerRequest.toIncomingMessage(request), maxBytes)
